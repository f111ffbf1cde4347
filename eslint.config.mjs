// Lint: typescript-eslint's recommended, type-aware rules on src and test.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bench/results/**', '**/*.cjs', '**/*.mjs', 'bin/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
      eqeqeq: ['error', 'always'],
      // Prettier wraps code at 160, not comments: they are held to it here
      'max-len': ['error', { code: 100000, comments: 160, ignoreUrls: true }],
    },
  },
  {
    // The CLI loads each command's modules when it runs: a typed require() (see src/cli/index.ts).
    files: ['src/cli/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
