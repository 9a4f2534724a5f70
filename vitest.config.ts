import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll's own default is 1 s: too short for a round trip on a busy 2-core CI machine.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: ['test/solo/**'],
          // Each end-to-end file starts its own server process; two at a time suit a 2-core machine.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          // Files that measure the service's latency run last and one at a time, so no other test
          // file competes with them for the two cores.
          name: 'solo',
          include: ['test/solo/**/*.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
