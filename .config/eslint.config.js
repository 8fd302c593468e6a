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
  { ignores: ['dist/**', 'node_modules/**', '.data/**', '.scratch/**', '.config/**'] },
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
    files: ['shared/domain/**/*.ts', 'shared/application/**/*.ts', 'shared/contracts/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', sdkImports] },
  },
);
