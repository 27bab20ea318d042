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
  // Each test file loads the server's modules afresh and jest keeps ~80 MB of every file's registry alive in its
  // process, so one process running the whole suite runs out of heap (CI aborted at 3.6 GB). The suite runs in
  // one worker (`--maxWorkers=1`: e2e files share ports and CPU), which jest replaces once it passes this size.
  workerIdleMemoryLimit: '1GB',
};
