// ESLint's flat config, kept under test/ so the top level holds only what a reader needs first:
// `npm run lint` passes it with `eslint -c test/eslint.config.js`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '**/.wrangler/', 'test/e2e/generated/', 'src/docs-assets/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // `_name` marks what is destructured or taken only to be left out.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Tests read JSON answers (`res.body.items[0].record`) and then assert their exact shape:
      // typing each answer first would repeat the schemas the assertions already check.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
