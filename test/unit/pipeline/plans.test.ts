import { describe, expect, it } from 'vitest';
import { compilePlan, PlanInvalid, unboundedSchema } from '../../../src/pipeline/plans.js';

describe('unboundedSchema', () => {
  it('finds $ref cycles that stay on one value', () => {
    for (const s of [
      { $ref: '#' },
      { allOf: [{ $ref: '#' }] },
      { $defs: { a: { $ref: '#/$defs/b' }, b: { anyOf: [{ $ref: '#/$defs/a' }] } }, $ref: '#/$defs/a' },
      { if: { $ref: '#/$defs/x' }, $defs: { x: { not: { $ref: '#/$defs/x' } } } },
      { $anchor: 'top', oneOf: [{ $ref: '#top' }] },
      { dependentSchemas: { a: { $ref: '#' } } },
    ])
      expect(unboundedSchema(s), JSON.stringify(s)).toContain('never end');
  });

  it('lets recursion through properties and items, and refs without a cycle, pass', () => {
    for (const s of [
      { type: 'object', additionalProperties: { $ref: '#' } },
      { properties: { a: { $ref: '#' } }, items: { $ref: '#' } },
      {
        $defs: { price: { type: 'integer', minimum: 0 } },
        properties: { propsLong: { properties: { amount: { $ref: '#/$defs/price' } } } },
      },
      { enum: [{ $ref: '#' }] },
      true,
    ])
      expect(unboundedSchema(s), JSON.stringify(s)).toBeNull();
  });

  it('refuses what would reach outside the schema or change its base', () => {
    expect(unboundedSchema({ $ref: 'https://example.com/s.json' })).toContain('another document');
    expect(unboundedSchema({ properties: { a: { $id: 'x', $ref: '#' } } })).toContain('$id');
    expect(unboundedSchema({ $dynamicRef: '#meta' })).toContain('$dynamicRef');
  });
});

describe('compilePlan', () => {
  it('runs patterns on RE2: a catastrophic one is linear, each pattern keeps its own meaning, lookahead is refused', () => {
    const plan = compilePlan({
      mode: 'block',
      unplannedEvents: 'allow',
      events: {
        e: {
          properties: {
            propsString: {
              type: 'object',
              properties: {
                a: { type: 'string', pattern: '^(\\w+\\s?)*$' },
                b: { type: 'string', pattern: '^[0-9]+$' },
              },
            },
          },
        },
      },
    });
    const v = plan.validators.get('e')!;
    const started = performance.now();
    expect(v({ propsString: { a: `${'a'.repeat(10_240)}!`, b: '12' } })).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(v({ propsString: { a: 'two words', b: '12' } })).toBe(true);
    expect(v({ propsString: { a: 'two words', b: 'x' } })).toBe(false);
    expect(() =>
      compilePlan({ mode: 'block', unplannedEvents: 'allow', events: { bad: { pattern: '(?=a)' } } }),
    ).toThrow(PlanInvalid);
    expect(() => compilePlan({ mode: 'block', unplannedEvents: 'allow', events: { bad: { $ref: '#' } } })).toThrow(
      /never end/,
    );
  });
});

describe('unboundedSchema, without a cycle', () => {
  it('refuses references that fan out until thousands of schemas apply to one value', () => {
    const defs: Record<string, unknown> = { a40: { type: 'string' } };
    for (let k = 39; k >= 0; k--)
      defs[`a${k}`] = { allOf: [{ $ref: `#/$defs/a${k + 1}` }, { $ref: `#/$defs/a${k + 1}` }] };
    expect(unboundedSchema({ $defs: defs, $ref: '#/$defs/a0' })).toContain('more than 1000 schemas');
    // A shared definition used many times over is fine while the total stays small.
    expect(
      unboundedSchema({
        $defs: { p: { type: 'integer' } },
        allOf: Array.from({ length: 50 }, () => ({ $ref: '#/$defs/p' })),
      }),
    ).toBeNull();
  });
});

describe('compilePlan, a schema that is not one', () => {
  it('names the event, the place, the value and what would do', () => {
    const refusal = (schema: unknown) => {
      try {
        compilePlan({
          mode: 'block',
          unplannedEvents: 'allow',
          events: { purchase: schema as Record<string, unknown> },
        });
        return null;
      } catch (err) {
        return err as PlanInvalid;
      }
    };
    const typo = refusal({ properties: { propsLong: { properties: { amount: { type: 'objekt' } } } } });
    expect(typo?.eventName).toBe('purchase');
    expect(typo?.message).toBe(
      'at /properties/propsLong/properties/amount/type: "objekt" is not valid there; it must be one of "array", "boolean", "integer", "null", "number", "object", "string"',
    );
    expect(refusal({ minimum: 'x' })?.message).toBe('at /minimum: "x" is not valid there; it must be number');
  });
});
