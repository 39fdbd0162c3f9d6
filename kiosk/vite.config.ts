import { defineConfig } from 'vite'
import solid from 'vite-plugin-solid'

// Served by the API under /kiosk/ (see server/modules/kiosk); hashed assets get a year-long cache there.
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
  },
})
