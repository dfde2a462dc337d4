import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/** Relative imports that reach into another project. */
const crossProject = {
  group: ['../../*/src/*', '../../../*/src/*', '../../../../*'],
  message: 'Import another project through its @estate/* entry point.',
};
/** An adapter is imported by its own path, and only where a process is composed (apps, libs/runtime, a service's main.ts). */
const adapters = {
  group: [
    '@estate/store/*.document-store',
    '@estate/store/data-dir-lock',
    '@estate/bus/*.bus',
    '@estate/search/*-listing.index',
    '@estate/blobs/*.blob-store',
  ],
  message:
    'Adapters are chosen where a process is composed (apps/*, libs/runtime, services/*/src/main.ts); use the port.',
};
const testHelpers = { group: ['@estate/testing', '@estate/testing/*'], message: 'Test helpers are for tests only.' };

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'clients/*/dist/**',
      'node_modules/**',
      'tmp/**',
      'data/**',
      'coverage/**',
      '.nx/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
      // Generated from the OpenAPI document (npm run client:generate).
      'clients/typescript/src/schema.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      'no-restricted-imports': ['error', { patterns: [crossProject] }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          allow: [],
          depConstraints: [
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
            // The platform knows no port and no adapter.
            { sourceTag: 'type:platform', onlyDependOnLibsWithTags: ['type:contracts', 'type:platform'] },
            // A port library (store, bus, search, blobs): its interface, its adapters, its contract suite.
            {
              sourceTag: 'type:port',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:platform', 'type:port', 'type:testing'],
            },
            {
              sourceTag: 'type:testing',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:platform', 'type:port', 'type:testing'],
            },
            // Process start-up: picks the distributed profile's adapters.
            {
              sourceTag: 'type:composition',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:platform', 'type:port'],
            },
            // A service never imports another service: data crosses over HTTP or NATS.
            {
              sourceTag: 'type:service',
              onlyDependOnLibsWithTags: [
                'type:contracts',
                'type:platform',
                'type:port',
                'type:composition',
                'type:testing',
              ],
            },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['*'] },
            // The client ships alone; only its tests start the product.
            { sourceTag: 'type:client', onlyDependOnLibsWithTags: ['type:app', 'type:contracts', 'type:testing'] },
          ],
        },
      ],
    },
  },
  {
    // Sources of libraries and services: no test helpers, no adapters but their own.
    files: ['libs/*/src/**/*.ts', 'services/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts', '**/*.test.ts', 'libs/testing/**', 'libs/runtime/**', 'services/*/src/main.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [crossProject, adapters, testHelpers] }] },
  },
  {
    files: ['clients/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@estate/*'], message: 'The client is published alone: it imports no project code.' }] },
      ],
    },
  },
  {
    files: ['libs/contracts/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!zod(/|$)|\\./|\\.\\./(?!\\.\\./))', message: 'contracts depend on zod alone.' }] },
      ],
    },
  },
);
