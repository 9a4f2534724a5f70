import { describe, expect, it } from 'vitest';
import { BodyBudget, DerivedBytes } from '../../../src/limits/body-budget.js';

describe('DerivedBytes', () => {
  it('holds a project to a quarter of the budget, counts derived bytes globally, and gives everything back', () => {
    const budget = new BodyBudget(400);
    const d = new DerivedBytes(budget);
    // A project holding nothing may always start (a single request is bounded by the body limits).
    expect(d.roomFor('a', 1000)).toBe(true);
    d.holdBody('a', 60);
    expect([d.roomFor('a', 40), d.roomFor('a', 41)]).toEqual([true, false]);
    expect(d.take('a', 40)).toBe(true);
    expect(d.take('a', 1)).toBe(false);
    // Bodies are the HTTP front's to count globally; derived bytes count here.
    expect(budget.bytes).toBe(40);
    expect(d.take('b', 100)).toBe(true);
    d.release('a', 40);
    d.releaseBody('a', 60);
    d.release('b', 100);
    expect(budget.bytes).toBe(0);
    expect(d.roomFor('a', 100)).toBe(true);
  });

  it('says which projects hold at least an equal share of what is held; an empty body holds nothing', () => {
    const d = new DerivedBytes(new BodyBudget(400));
    d.holdBody('a', 30);
    d.holdBody('b', 20);
    expect([d.holdsShare('a'), d.holdsShare('b'), d.holdsShare('c')]).toEqual([true, false, false]);
    // An entry for an empty body would make three holders, and 'b' (20 of 50) would then be past the average.
    d.holdBody('c', 0);
    expect(d.take('c', 0)).toBe(true);
    expect([d.holdsShare('a'), d.holdsShare('b'), d.holdsShare('c')]).toEqual([true, false, false]);
    d.holdBody('b', 10);
    expect([d.holdsShare('a'), d.holdsShare('b')]).toEqual([true, true]);
    d.releaseBody('b', 30);
    expect(d.holdsShare('a')).toBe(true);
  });

  it('refuses when the global budget has no room, whatever the share', () => {
    const budget = new BodyBudget(400);
    budget.take(390);
    expect(new DerivedBytes(budget).take('a', 20)).toBe(false);
    expect(budget.bytes).toBe(390);
  });
});
