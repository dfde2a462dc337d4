/** One Jest run over every project; real-engine suites find their engines through env (see libs/testing). */
const swc = ['@swc/jest', { jsc: { parser: { syntax: 'typescript', decorators: false }, target: 'es2022' }, module: { type: 'commonjs' } }];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/libs', '<rootDir>/services', '<rootDir>/apps', '<rootDir>/test'],
  testMatch: ['**/*.spec.ts', '**/*.test.ts'],
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
    '^@estate/search/(.*)$': '<rootDir>/libs/search/src/$1.ts',
    '^@estate/blobs/(.*)$': '<rootDir>/libs/blobs/src/$1.ts',
    '^@estate/runtime$': '<rootDir>/libs/runtime/src/index.ts',
    '^@estate/embedded$': '<rootDir>/apps/embedded/src/index.ts',
    '^@estate/(listings|media|leads|gateway)$': '<rootDir>/services/$1/src/index.ts',
  },
  globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
