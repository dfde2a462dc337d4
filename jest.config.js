/**
 * Three test tiers, told apart by file suffix, each a Jest project (`npx jest --selectProjects unit`):
 *   unit    *.spec.ts          pure, no I/O
 *   int     *.int.test.ts      adapters, HTTP through app.inject, contract suites on engines when their URLs are set
 *   system  *.system.test.ts   the services as separate processes on real engines, driven through the gateway
 * Real-engine suites find their engines through env (see libs/testing). A file named like a test but in no tier
 * is caught by libs/testing/test/tiers.int.test.ts rather than silently left out.
 */
const swc = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'typescript', decorators: false }, target: 'es2022' }, module: { type: 'commonjs' } },
];

const shared = {
  rootDir: __dirname,
  testEnvironment: 'node',
  roots: [
    '<rootDir>/libs',
    '<rootDir>/services',
    '<rootDir>/apps',
    '<rootDir>/tools',
    '<rootDir>/test',
    '<rootDir>/clients',
  ],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: {
    '^@estate/contracts$': '<rootDir>/libs/contracts/src/index.ts',
    '^@estate/contracts/(.*)$': '<rootDir>/libs/contracts/src/$1.ts',
    '^@estate/platform$': '<rootDir>/libs/platform/src/index.ts',
    '^@estate/platform/(.*)$': '<rootDir>/libs/platform/src/$1/index.ts',
    '^@estate/store$': '<rootDir>/libs/store/src/index.ts',
    '^@estate/store/(.*)$': '<rootDir>/libs/store/src/$1.ts',
    '^@estate/testing$': '<rootDir>/libs/testing/src/index.ts',
    '^@estate/bus$': '<rootDir>/libs/bus/src/index.ts',
    '^@estate/bus/(.*)$': '<rootDir>/libs/bus/src/$1.ts',
    '^@estate/blobs$': '<rootDir>/libs/blobs/src/index.ts',
    '^@estate/search$': '<rootDir>/libs/search/src/index.ts',
    '^@estate/reso$': '<rootDir>/libs/reso/src/index.ts',
    '^@estate/search/(.*)$': '<rootDir>/libs/search/src/$1.ts',
    '^@estate/blobs/(.*)$': '<rootDir>/libs/blobs/src/$1.ts',
    '^@estate/runtime$': '<rootDir>/libs/runtime/src/index.ts',
    '^@estate/embedded$': '<rootDir>/apps/embedded/src/index.ts',
    '^@estate/client$': '<rootDir>/clients/typescript/src/index.ts',
    '^@estate/(listings|media|leads|gateway|webhooks)$': '<rootDir>/services/$1/src/index.ts',
  },
};

/**
 * Builds dist/ once before any worker starts (process tests spawn the bundles: the CLI, the outbox crash writer,
 * the system tier), and starts engines with testcontainers where a URL is missing and Docker is there. Jest runs
 * a project's global setup only when that project has tests to run, and the same module once per run.
 */
const withProcesses = {
  globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.ts',
};

module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['**/*.spec.ts'] },
    { ...shared, ...withProcesses, displayName: 'int', testMatch: ['**/*.int.test.ts'] },
    { ...shared, ...withProcesses, displayName: 'system', testMatch: ['**/*.system.test.ts'] },
  ],
  // Tests wait for background work (renders, events, deliveries) that a loaded machine slows down by seconds: the
  // limit is for a test that hangs, not a measure of speed (that is the bench's).
  testTimeout: 120000,
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/libs/testing/src/summary-reporter.js'],
};
