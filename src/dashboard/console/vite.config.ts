/// <reference types="vitest/config" />
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

/** The console's budget: every file of the build together, gzipped (the issue: ≤ 300 KB). */
export const BUNDLE_BUDGET_BYTES = 300 * 1024;
const OUT_DIR = join(__dirname, '..', '..', '..', 'dist', 'console');

/** Sums the gzipped size of every file written, prints it, and fails the build over the budget. */
function bundleBudget(): Plugin {
  return {
    name: 'sluice-bundle-budget',
    apply: 'build',
    closeBundle() {
      const files: string[] = [];
      const walk = (d: string) => readdirSync(d).forEach((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : files.push(join(d, n))));
      walk(OUT_DIR);
      let total = 0;
      for (const f of files) total += gzipSync(readFileSync(f), { level: 9 }).length;
      const kb = (total / 1024).toFixed(1);
      console.log(`console bundle: ${files.length} files, ${kb} KB gzipped (budget ${BUNDLE_BUDGET_BYTES / 1024} KB): ${files.map((f) => relative(OUT_DIR, f)).join(', ')}`);
      if (total > BUNDLE_BUDGET_BYTES) throw new Error(`console bundle ${kb} KB gzipped is over the ${BUNDLE_BUDGET_BYTES / 1024} KB budget`);
    },
  };
}

/**
 * The operator console (React + TypeScript): built into dist/console, served by
 * the dashboard module under /ui/. No React plugin: Vite's own transform
 * (oxc) compiles JSX with the automatic runtime; there is no fast refresh.
 */
export default defineConfig({
  root: __dirname,
  base: '/ui/',
  oxc: { jsx: { runtime: 'automatic' } },
  plugins: [bundleBudget()],
  build: {
    outDir: OUT_DIR,
    emptyOutDir: true,
    // No inline module preload polyfill: the page's CSP allows scripts from 'self' only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
    // One chunk for the app, one for the chart library (loaded after the first paint); the budget plugin guards the total.
    chunkSizeWarningLimit: 1000,
    rolldownOptions: {
      // The libraries' 'use client' markers mean nothing in a plain SPA bundle.
      onwarn(w, warn) {
        if (w.code !== 'MODULE_LEVEL_DIRECTIVE') warn(w);
      },
    },
  },
  server: { proxy: { '^/(?!ui/)': 'http://127.0.0.1:3000' } },
  test: {
    root: __dirname,
    environment: 'jsdom',
    include: ['**/*.test.{ts,tsx}'],
    setupFiles: ['./test/setup.ts'],
    css: false,
  },
});
