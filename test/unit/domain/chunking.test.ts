import { describe, expect, it } from 'vitest';
import { fullWindows, interactionId, sessionSeqRange } from '../../../shared/domain/chunking.js';
import { turns } from '../../support/builders.js';

describe('fullWindows', () => {
  it('given 25 turns and k=10, makes two full windows and leaves the last 5 for later', () => {
    const windows = fullWindows(turns(1, 25), 10);
    expect(windows.map((w) => [w.fromSeq, w.toSeq, w.turns.length])).toEqual([
      [1, 10, 10],
      [11, 20, 10],
    ]);
  });

  it('given fewer than k turns, makes no window', () => {
    expect(fullWindows(turns(1, 9), 10)).toEqual([]);
  });

  it('given turns with gaps in seq (session events between), spans the window over the turns it holds', () => {
    const withGap = [...turns(1, 2), ...turns(4, 5)];
    expect(fullWindows(withGap, 2).map((w) => [w.fromSeq, w.toSeq])).toEqual([
      [1, 2],
      [4, 5],
    ]);
  });
});

describe('interactionId', () => {
  it('is the same for the same window and sorts by seq', () => {
    expect(interactionId('s1', 11)).toBe(interactionId('s1', 11));
    expect([interactionId('s1', 101), interactionId('s1', 11)].sort()).toEqual([interactionId('s1', 11), interactionId('s1', 101)]);
  });
});

describe('sessionSeqRange', () => {
  it('given a session chunked through seq 42, spans its turns from seq 1', () => {
    expect(sessionSeqRange(42)).toEqual([1, 42]);
  });

  it('given nothing chunked (null, unknown or 0), has no range', () => {
    expect([sessionSeqRange(null), sessionSeqRange(undefined), sessionSeqRange(0)]).toEqual([undefined, undefined, undefined]);
  });
});
