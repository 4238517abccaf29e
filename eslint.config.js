// Lint: typescript-eslint's type-aware recommended rules over every TypeScript file the
// typecheck covers, plus the house rules tsc cannot check (`import type` for types, no enums).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  // console/ is type-checked by its own build (strict tsc over the API types it generates first);
  // worker/ is Rust, its js is a test fixture and a measuring script run by hand.
  { ignores: ['dist/', 'client/dist/', 'client/bin/', 'wasmkube/dist/', 'wasmkube/bin/', 'coverage/', '.tap/', 'node_modules/', 'eslint.config.js', 'builders/templates/', 'builders/Dockerfile.*', 'console/', '.cache/', 'worker/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Best-effort cleanup (`try { x.close() } catch {}`) is common here and says what it means.
      'no-empty': ['error', { allowEmptyCatch: true }],
      // A leading underscore marks a binding kept for its position or to drop a property from a rest.
      '@typescript-eslint/no-unused-vars': ['error', {
        argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true
      }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'separate-type-imports' }],
      'no-restricted-syntax': ['error', {
        selector: 'TSEnumDeclaration',
        message: 'No enums (house rule): use a union of string literals or an `as const` object.'
      }]
    }
  },
  {
    // Plain-JavaScript scripts: they run before anything is compiled, outside the typecheck.
    files: ['scripts/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false },
      globals: { process: 'readonly', URL: 'readonly', console: 'readonly' }
    }
  },
  {
    // Fastify route plugins are async functions by its contract (FastifyPluginAsync); one that
    // only declares routes has nothing to await.
    files: ['control/src/http/routes/*.ts'],
    rules: { '@typescript-eslint/require-await': 'off' }
  },
  {
    // Kubernetes manifests read from YAML are walked as plain data.
    files: ['test/helpers/manifests.ts', 'test/deploy/manifests.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' }
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // tap's idiom: subtests are queued by `t.test(...)` and awaited by tap itself, in order.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafePromises: [{ from: 'package', name: 'PromiseWithSubtest', package: '@tapjs/core' }]
      }],
      // Tests read untyped JSON off the wire on purpose and check its shape with t.same/t.match:
      // typing every response body would only restate the assertion.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // tap callbacks are written `async t => {}` throughout, with or without an await.
      '@typescript-eslint/require-await': 'off'
    }
  }
)
