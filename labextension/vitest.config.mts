import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'jsdom',
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    // Two shared cores: one worker is enough for these tests.
    pool: 'threads',
    poolOptions: { threads: { maxThreads: 1, minThreads: 1 } }
  }
});
