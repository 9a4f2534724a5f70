import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Each end-to-end file starts its own server process; two at a time suit a 2-core machine.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
