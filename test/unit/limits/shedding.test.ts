import { describe, expect, it } from 'vitest';
import { LoadShedder } from '../../../src/limits/shedding.js';

function shedder() {
  // `inHand` null: the writer holds requests exactly when some wait (delay > 0).
  const s = { delay: 0, loop: 0, now: 0, shed: 0, heavy: new Set<string>(), inHand: null as boolean | null };
  const l = new LoadShedder(
    {
      queueDelayMs: () => s.delay,
      inHand: () => s.inHand ?? s.delay > 0,
      loopDelayMs: () => s.loop,
      holdsShare: (projectId) => s.heavy.has(projectId),
    },
    50,
    () => s.shed++,
    () => s.now,
  );
  /** One arrival, as the HTTP front asks: true when shed; a request let in is in hand until answered. */
  const shedding = (projectId: string | null = null, keyed = projectId !== null) => {
    const refused = l.refusal(projectId, keyed) !== null;
    if (!refused) l.admitted();
    return refused;
  };
  /** An open-loop client past capacity for `ms`: three arrivals a millisecond, two of them answered. */
  const outpace = (ms: number, projectId: string | null = null) => {
    let shed = 0;
    for (let i = 0; i < ms; i++) {
      s.now++;
      for (let k = 0; k < 3; k++) if (shedding(projectId)) shed++;
      l.answered();
      l.answered();
    }
    return shed;
  };
  /**
   * A closed-loop client (its connections opened before) for `ms`, ten answers a millisecond: each answer brings the
   * next request at once, and so does each refusal (up to 50 times in a millisecond, as fast as they come back).
   */
  const closedLoop = (ms: number, projectId: string | null = null) => {
    let shed = 0;
    const shedAt: number[] = [];
    for (let i = 0; i < ms; i++) {
      s.now++;
      for (let k = 0; k < 10; k++) {
        l.answered();
        for (let tries = 0; tries < 50 && shedding(projectId); tries++) {
          shed++;
          shedAt.push(s.now);
        }
      }
    }
    return Object.assign(shed, { last: shedAt.at(-1) ?? null }) as number & { last: number | null };
  };
  const open = (connections: number, projectId: string | null = null) => {
    for (let i = 0; i < connections; i++) shedding(projectId);
  };
  return { s, l, shedding, outpace, closedLoop, open };
}

describe('LoadShedder', () => {
  it('never sheds a closed-loop client, however long its requests wait: its backlog is bounded by its connections', () => {
    const { s, closedLoop, open } = shedder();
    s.delay = 400;
    // 2,000 connections opening over 300 ms (the backlog steps up over several ticks), then 10 s at a standing wait.
    for (let i = 0; i < 6; i++) {
      open(333);
      s.now += 50;
    }
    expect(Number(closedLoop(10_000))).toBe(0);
    expect(s.shed).toBe(0);
  });

  it('sheds once arrivals have outpaced completions for 600 ms with the delay over the bound for 100 ms', () => {
    const { s, l, outpace, shedding } = shedder();
    s.delay = 400;
    // Growing, but not yet for long enough.
    expect(outpace(600)).toBe(0);
    expect(outpace(200)).toBeGreaterThan(0);
    expect(shedding()).toBe(true);
    expect(s.shed).toBeGreaterThan(0);
    // The answer: 503 overloaded with Retry-After, one shared constant.
    const refusal = l.refusal();
    expect(refusal?.status).toBe(503);
    expect(refusal?.code).toBe('overloaded');
    expect(refusal?.retryAfterS).toBe(1);
    expect(l.refusal()).toBe(refusal);
  });

  it('lets a moment over the bound pass even while the backlog grows: the delay must stay over it for 100 ms', () => {
    const { s, outpace, shedding } = shedder();
    s.delay = 10;
    outpace(800);
    s.delay = 400;
    expect(outpace(90)).toBe(0);
    // One arrival under the bound restarts the clock.
    s.delay = 40;
    expect(shedding()).toBe(false);
    s.delay = 400;
    expect(outpace(90)).toBe(0);
    expect(outpace(20)).toBeGreaterThan(0);
  });

  it('starts the clock again after a quiet second: two arrivals over the bound seconds apart are not 100 ms over it', () => {
    const { s, l, outpace } = shedder();
    s.delay = 200;
    outpace(650);
    // The backlog goes on growing for a second, but no arrival asks meanwhile: nothing saw the delay in that second.
    for (let i = 0; i < 1001; i++) {
      s.now++;
      for (let k = 0; k < 3; k++) l.admitted();
      l.answered();
      l.answered();
    }
    expect(outpace(90)).toBe(0);
    // 100 ms of arrivals over the bound after the quiet second, the growth still going: that is overload.
    expect(outpace(20)).toBeGreaterThan(0);
  });

  it('keeps shedding down to the bound, stops at it, starts again at once within a second; later only on growth', () => {
    const { s, outpace, shedding } = shedder();
    s.delay = 200;
    outpace(800);
    expect(shedding()).toBe(true);
    s.delay = 60;
    expect(shedding()).toBe(true);
    s.delay = 50;
    expect(shedding()).toBe(false);
    // The overload found is likely still there: over the bound again within a second, shedding starts at once.
    s.now += 999;
    s.delay = 60;
    expect(shedding()).toBe(true);
    s.delay = 10;
    expect(shedding()).toBe(false);
    // Over a second later, it takes growth again, as the first time.
    s.now += 1001;
    s.delay = 200;
    expect(outpace(550)).toBe(0);
    expect(outpace(300)).toBeGreaterThan(0);
  });

  it('stops shedding clients that come straight back, and sheds them no more while their backlog stays', () => {
    const { s, outpace, closedLoop, shedding } = shedder();
    s.delay = 200;
    s.heavy.add('p');
    // An open-loop burst of a tenant's keyed requests sheds; once it is over the bound is met and shedding stops.
    outpace(800, 'p');
    expect(shedding('p')).toBe(true);
    s.delay = 20;
    expect(shedding('p')).toBe(false);
    // A closed-loop client of the same tenant keeps requests waiting past the bound: shedding starts again at once, its
    // clients send again at once, far faster than the overload's arrivals came; that shedding ends within COMEBACK_MS,
    // for good.
    s.delay = 200;
    const started = s.now;
    const shed = closedLoop(5000, 'p');
    expect(Number(shed)).toBeGreaterThan(0);
    expect(shed.last! - started).toBeLessThan(100);
  });

  it('takes no flood of unknown keys or unread bodies for clients coming back: shedding goes on', () => {
    const { s, l, outpace, shedding } = shedder();
    s.delay = 200;
    s.heavy.add('p');
    outpace(800, 'p');
    expect(shedding('p')).toBe(true);
    // Fifty arrivals a millisecond that name no known project, beside the tenant's overload, for half a second.
    for (let i = 0; i < 500; i++) {
      s.now++;
      for (let k = 0; k < 50; k++) l.refusal(null, k % 2 === 0);
      expect(shedding('p')).toBe(true);
      l.answered();
    }
  });

  it('sheds requests that have waited two seconds for a second, whatever the growth', () => {
    const { s, closedLoop, open } = shedder();
    s.delay = 1990;
    open(1000);
    expect(Number(closedLoop(3000))).toBe(0);
    s.delay = 2000;
    expect(Number(closedLoop(999))).toBe(0);
    expect(Number(closedLoop(10))).toBeGreaterThan(0);
  });

  it('takes one known request for no comeback when the shedding was found without any (the long wait alone)', () => {
    const { s, shedding } = shedder();
    s.delay = 2000;
    s.heavy.add('p');
    // Only requests of no known project (webapp bodies, made-up keys) for a second past the long wait: shedding.
    for (let i = 0; i <= 1000; i++) {
      s.now++;
      shedding(null);
    }
    expect(shedding(null)).toBe(true);
    // One keyed request of a known project 60 ms later is no client coming back twice as fast as anything.
    s.now += 60;
    expect(shedding('p')).toBe(true);
    s.now++;
    expect(shedding(null)).toBe(true);
  });

  it("while shedding, lets in a project holding less than an equal share: one tenant's backlog sheds that tenant", () => {
    const { s, outpace, shedding } = shedder();
    s.delay = 200;
    s.heavy.add('heavy');
    outpace(800, 'heavy');
    expect(shedding('heavy')).toBe(true);
    expect(shedding('light')).toBe(false);
    // A project not known from memory (a webapp body not yet read, a key not cached) is shed.
    const before = s.shed;
    expect(shedding(null)).toBe(true);
    expect(s.shed).toBe(before + 1);
    s.delay = 10;
    expect(shedding('heavy')).toBe(false);
  });

  it("counts the loop's delay only with work in hand, and against requests of a known project only", () => {
    const { s, outpace, shedding } = shedder();
    s.heavy.add('heavy');
    // Late with nothing in hand: nobody is shed.
    s.inHand = false;
    s.loop = 500;
    expect(outpace(800, 'heavy')).toBe(0);
    // With work in hand, the writer's delay and the loop's together are over the bound.
    s.inHand = null;
    s.delay = 20;
    expect(outpace(800, 'heavy')).toBeGreaterThan(0);
    expect(shedding('heavy')).toBe(true);
    // A request of no known project is judged by the writer alone (an unauthenticated flood can make the loop late).
    expect(shedding(null)).toBe(false);
    s.delay = 60;
    expect(shedding(null)).toBe(true);
  });

  it("counts the loop's delay in proportion to the keyed arrivals of a known project: made-up keys shed no tenant", () => {
    const { s, l, shedding } = shedder();
    s.heavy.add('heavy');
    s.inHand = true;
    s.loop = 100;
    // A tenant's growing backlog among forty times as many keys of no known project (made-up keys refused from memory).
    for (let t = 0; t < 1000; t++) {
      s.now = t;
      if (t % 40 === 0) expect(shedding('heavy')).toBe(false);
      else expect(l.refusal(null, true)).toBe(null);
      if (t % 10 === 0) l.admitted();
    }
    // Webapp arrivals (no key) do not count either way: among them, the tenant's backlog is the tenant's own.
    let shed = false;
    for (let t = 3000; t < 4200; t++) {
      s.now = t;
      if (t % 40 === 0) shed = shedding('heavy') || shed;
      else expect(l.refusal(null, false)).toBe(null);
      if (t % 10 === 0) l.admitted();
    }
    expect(shed || shedding('heavy')).toBe(true);
  });

  it("counts the loop's delay while commits are under way though no request waits for one", () => {
    const { s, outpace, shedding } = shedder();
    s.heavy.add('heavy');
    s.inHand = true;
    s.loop = 80;
    expect(outpace(800, 'heavy')).toBeGreaterThan(0);
    s.inHand = false;
    expect(shedding('heavy')).toBe(false);
  });
});
