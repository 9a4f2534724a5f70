import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/errors.js';
import { SerialLane } from '../../../src/limits/serial-lane.js';

describe('SerialLane', () => {
  it('runs one at a time, in order, and refuses past what it may hold with 503 overloaded', async () => {
    const lane = new SerialLane(2);
    const log: string[] = [];
    let release: () => void = () => undefined;
    const first = lane.run(async () => {
      log.push('a start');
      await new Promise<void>((r) => {
        release = r;
      });
      log.push('a end');
      return 'a';
    });
    const second = lane.run(async () => {
      log.push('b');
      return 'b';
    });
    const third = lane.run(async () => 'c');
    await expect(third).rejects.toBeInstanceOf(HttpError);
    await expect(third).rejects.toMatchObject({ code: 'overloaded' });
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual(['a start']);
    release();
    expect(await Promise.all([first, second])).toEqual(['a', 'b']);
    expect(log).toEqual(['a start', 'a end', 'b']);
    expect([lane.size, lane.started]).toEqual([0, 2]);
  });

  it('goes on after a failure, and holds nothing when its bound is 0', async () => {
    const lane = new SerialLane(1);
    await expect(lane.run(() => Promise.reject(new Error('lookup failed')))).rejects.toThrow('lookup failed');
    expect(await lane.run(async () => 1)).toBe(1);
    await expect(new SerialLane(0).run(async () => 1)).rejects.toMatchObject({ code: 'overloaded' });
  });
});
