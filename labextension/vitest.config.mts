import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'jsdom',
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    // JupyterLab's web components import their modules without file extensions, which
    // Node's ESM loader refuses: let Vite resolve them (comparison.ts imports renderHTML).
    server: { deps: { inline: [/@jupyter\/web-components/] } },
    // Two shared cores: one worker is enough for these tests.
    pool: 'threads',
    poolOptions: { threads: { maxThreads: 1, minThreads: 1 } }
  }
});
