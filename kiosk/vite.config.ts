import { resolve } from 'node:path'
import { defineConfig } from 'vite'
import solid from 'vite-plugin-solid'

// Served by the API (see server/lib/app-pages.ts): the kiosk at /kiosk/{token}, the counter console at /staff, the manager app at
// /manage, the ticket dispenser at /dispenser/{token}, the first-run setup page at /setup, the printable receipt at
// /receipts/{operation id} and an external customer's statement at /estado-de-cuenta/{client id}; their hashed assets
// under /kiosk/assets/ get a year-long cache there.
export default defineConfig({
  root: import.meta.dirname,
  base: '/kiosk/',
  plugins: [solid()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2020',
    // Inlined assets would need `data:` in script/style CSP sources; keep every asset a file.
    assetsInlineLimit: 0,
    rolldownOptions: {
      // The bundler's report of where a slow build's time went is for profiling, not for every `npm start`.
      checks: { bundlerTimings: false },
      input: {
        index: resolve(import.meta.dirname, 'index.html'),
        staff: resolve(import.meta.dirname, 'staff.html'),
        dispenser: resolve(import.meta.dirname, 'dispenser.html'),
        manage: resolve(import.meta.dirname, 'manage.html'),
        setup: resolve(import.meta.dirname, 'setup.html'),
        'setup-done': resolve(import.meta.dirname, 'setup-done.html'),
        receipt: resolve(import.meta.dirname, 'receipt.html'),
        statement: resolve(import.meta.dirname, 'statement.html'),
      },
    },
  },
})
