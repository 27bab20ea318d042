/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  transform: {
    // tsconfig.jest.json sets isolatedModules: files are transpiled alone (fast); `npm run typecheck` type-checks.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json' }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  testTimeout: 30000,
  // a handle a test leaks (a child process pipe, a socket) must never hold CI open; jest still warns of it
  forceExit: true,
};
