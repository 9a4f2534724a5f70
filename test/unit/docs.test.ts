import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/errors.js';
import { DIAGNOSTICS } from '../../src/pipeline/diagnostics.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it.each(Object.entries(ERRORS))('documents error %s with its status', (code, { status }) => {
    expect(readme).toMatch(new RegExp(`\\| \`${code}\` \\| ${status} \\|`));
  });
  it.each(Object.entries(DIAGNOSTICS))('documents diagnostic %s with its severity', (code, { severity }) => {
    expect(readme).toMatch(new RegExp(`\\| \`${code}\` \\| ${severity} \\|`));
  });
  it('starts with make run and make test', () => {
    const firstScreen = readme.split('\n').slice(0, 12).join('\n');
    expect(firstScreen).toContain('make run');
    expect(firstScreen).toContain('make test');
  });
});
