// @ts-check
import tseslint from 'typescript-eslint';

const sdkImports = {
  patterns: [
    { group: ['@azure/*'], message: 'The core stays Azure-free: put SDK code in shared/adapters or shared/platform.' },
    { group: ['openai', 'openai/*'], message: 'Model SDKs belong in shared/adapters/openai.' },
    { group: ['durable-functions', 'durable-functions/*'], message: 'Durable code belongs in functions/ or shared/platform.' },
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', '.deploy/**', 'node_modules/**', '.data/**', '.scratch/**', '.config/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: new URL('..', import.meta.url).pathname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['shared/domain/**/*.ts', 'shared/application/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', sdkImports] },
  },
  {
    // Contracts are the shapes every layer shares, so they depend on nothing of ours but each other.
    files: ['shared/contracts/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [...sdkImports.patterns, { regex: '^\\.\\./', message: 'Contracts import nothing of ours except other contracts modules (./x.js).' }] },
      ],
    },
  },
  {
    // An adapter implements ports (application) over contracts and domain; it never leans on a sibling adapter or on
    // the platform that composes them.
    files: ['shared/adapters/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^\\.\\./(?!\\.\\./)[^/]+/|^(\\.\\./)+adapters/', message: 'An adapter never imports another adapter: move the shared code to domain/ or application/.' },
            { regex: '^(\\.\\./)+platform/', message: 'Adapters never import shared/platform: take what they need as options.' },
          ],
        },
      ],
    },
  },
  {
    // The client (shared/client) runs in any fetch runtime: it imports the contracts for their types only (no zod, no
    // node:crypto at run time), the agent SDKs for their types only (optional peers), and nothing else of ours.
    files: ['shared/client/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^\\.\\./(?!contracts/)', message: 'The client imports nothing of ours but the contracts (types only).' },
            { regex: '^\\.\\./contracts/', allowTypeImports: true, message: 'The client imports the contracts for their types only (import type).' },
            { group: ['zod', 'ai', '@ai-sdk/*', '@openai/*'], allowTypeImports: true, message: 'The client imports these for their types only (import type).' },
            { group: ['node:*', '@azure/*', 'openai', 'openai/*', 'durable-functions', 'durable-functions/*'], message: 'The client runs on fetch alone (Node 20+ and edge runtimes).' },
          ],
        },
      ],
    },
  },
);
