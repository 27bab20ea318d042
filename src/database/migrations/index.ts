/** Every migration, in order. Named `<epoch>-<What>.ts`; the app runs them at boot. */
export const MIGRATIONS: Function[] = [];
