// Lint rules for the whole project; formatting is Prettier's (`npm run format`), so the rules
// that would argue with it are off (eslint-config-prettier).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      // A callback made before the value it uses exists reads it as `x?.()`; that `let` stays.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `_`-prefixed parameters and destructured leftovers are unused on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
);
