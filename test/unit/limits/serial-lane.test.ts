import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/base/errors.js';
import { SerialLane } from '../../../src/limits/serial-lane.js';

const full = () => new HttpError('overloaded', { retryAfterS: 1 });

describe('SerialLane', () => {
  it('runs one at a time, in order, and refuses past what it may hold with 503 overloaded', async () => {
    const lane = new SerialLane(2, 2, full);
    const log: string[] = [];
    let release: () => void = () => undefined;
    const first = lane.run('a', async () => {
      log.push('a start');
      await new Promise<void>((r) => {
        release = r;
      });
      log.push('a end');
      return 'a';
    });
    const second = lane.run('a', async () => {
      log.push('b');
      return 'b';
    });
    const third = lane.run('a', async () => 'c');
    await expect(third).rejects.toBeInstanceOf(HttpError);
    await expect(third).rejects.toMatchObject({ code: 'overloaded' });
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual(['a start']);
    release();
    expect(await Promise.all([first, second])).toEqual(['a', 'b']);
    expect(log).toEqual(['a start', 'a end', 'b']);
    expect(lane.started).toBe(2);
    // Room again once they are done.
    expect(await lane.run('a', async () => 'd')).toBe('d');
  });

  it('holds at most its share for one key', async () => {
    const lane = new SerialLane(4, 1, full);
    let release: () => void = () => undefined;
    const first = lane.run('a', () => new Promise<void>((r) => (release = r)));
    await expect(lane.run('a', async () => 1)).rejects.toMatchObject({ code: 'overloaded' });
    const other = lane.run('b', async () => 2);
    release();
    await first;
    expect(await other).toBe(2);
    expect(await lane.run('a', async () => 3)).toBe(3);
  });

  it('goes on after a failure, and holds nothing when its bound is 0', async () => {
    const lane = new SerialLane(1, 1, full);
    await expect(lane.run('a', () => Promise.reject(new Error('lookup failed')))).rejects.toThrow('lookup failed');
    expect(await lane.run('a', async () => 1)).toBe(1);
    await expect(new SerialLane(0, 0, full).run('a', async () => 1)).rejects.toMatchObject({ code: 'overloaded' });
  });
});
