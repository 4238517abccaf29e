// The console builds to dist/console at the repository root, beside the control plane's own
// build, which serves it (control/src/http/console.ts). Hashed names under assets/ are what
// lets the server cache them for good.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    // No inline script anywhere: the Content-Security-Policy allows scripts from files only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: 'es2022',
    chunkSizeWarningLimit: 1024,
  },
})
