import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEAD_PROJECTOR_MS } from '../../../shared/application/forget.js';
import { loadSettings } from '../../../shared/platform/config.js';

/** host.json's `functionTimeout` ("hh:mm:ss") in seconds: the longest an invocation, and so a late write, can run. */
function functionTimeoutSeconds(): number {
  const { functionTimeout } = JSON.parse(readFileSync(new URL('../../../host.json', import.meta.url), 'utf8')) as { functionTimeout: string };
  const [h, m, s] = functionTimeout.split(':').map(Number);
  return h! * 3600 + m! * 60 + s!;
}

// The forget's proof rests on these bounds (README, Forget): a change of host.json must move them with it.
describe('forget bounds follow the function timeout', () => {
  it('the default grace outwaits any invocation, so a write whose writer died before its check lands before the last round', () => {
    expect(loadSettings({}).FORGET_GRACE_SECONDS).toBeGreaterThanOrEqual(functionTimeoutSeconds());
  });

  it('a projector tombstone is taken for dead only once no invocation can still hold it', () => {
    expect(DEAD_PROJECTOR_MS / 1000).toBeGreaterThan(functionTimeoutSeconds());
  });
});
