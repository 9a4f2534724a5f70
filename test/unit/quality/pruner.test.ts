import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QuarantinePruner } from '../../../src/quality/pruner.js';
import type { QualityStore } from '../../../src/quality/store.js';
import type { Logger } from '../../../src/base/log.js';

/** A store that records which projects each prune was asked to count, and answers as told. */
function store(answers: (number | null | Error)[]) {
  const asked: (string[] | null)[] = [];
  const s = {
    prune: async (_max: number, _days: number, projects: readonly string[] | null) => {
      asked.push(projects === null ? null : [...projects].sort());
      const a = answers.length > 0 ? answers.shift() : 0;
      if (a instanceof Error) throw a;
      return a;
    },
  };
  return { s: s as unknown as QualityStore, asked };
}
const log = { warn: () => undefined } as unknown as Logger;
const tick = async () => {
  await vi.advanceTimersByTimeAsync(1000);
};

describe('quarantine pruner', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('counts every project first, then only those that quarantined since', async () => {
    const { s, asked } = store([]);
    const p = new QuarantinePruner(s, { maxEvents: 5, retentionDays: 7, everyMs: 1000 }, log);
    p.quarantined('a');
    await tick();
    p.quarantined('b');
    p.quarantined('c');
    p.quarantined('b');
    await tick();
    await tick();
    p.stop();
    expect(asked).toEqual([null, ['b', 'c'], []]);
  });

  it('keeps the projects for the next prune when another instance held the lock or the prune failed', async () => {
    const { s, asked } = store([null, 3, null, new Error('connection lost'), 0]);
    const p = new QuarantinePruner(s, { maxEvents: 5, retentionDays: 7, everyMs: 1000 }, log);
    await tick(); // every project, but another instance was pruning
    await tick(); // every project again
    p.quarantined('a');
    await tick(); // lock held elsewhere
    p.quarantined('b');
    await tick(); // failed
    await tick();
    p.stop();
    expect(asked).toEqual([null, null, ['a'], ['a', 'b'], ['a', 'b']]);
  });
});
