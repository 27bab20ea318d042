/** Nest injection tokens for the executor's ports (src/core/executor/contracts.ts). */
export const TOOL_INVOKER = Symbol('TOOL_INVOKER'); // provided by the tools module
export const CONSENT_PORT = Symbol('CONSENT_PORT'); // provided by the permissions module
