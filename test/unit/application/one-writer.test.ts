import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../..', import.meta.url).pathname;
const sources = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));

describe('the session document has one writer', () => {
  it('is written (SessionStore.put) only by the projector, which folds it from the events', () => {
    const writers = [...sources('shared'), ...sources('functions')].filter((file) => /\bsessions\.put\(/.test(readFileSync(join(root, file), 'utf8')));
    expect(writers.map((f) => relative(root, join(root, f)))).toEqual(['shared/application/project-session.ts']);
  });
});
