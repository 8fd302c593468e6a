import { describe, expect, it } from 'vitest';
import { parseTranscript } from '../../../../shared/adapters/local-models/text.js';
import { renderTranscript } from '../../../../shared/domain/turns.js';
import { turn } from '../../../support/builders.js';

describe('parseTranscript', () => {
  it('given a rendered transcript with a turn of only tool calls, then keeps what was said and drops the calls', () => {
    const calls = [{ id: 'c1', type: 'function' as const, function: { name: 'lookup', arguments: '{"q":"rates"}' } }];
    const text = renderTranscript([
      turn(1, 'What are the rates?', { role: 'user' }),
      turn(2, '', { role: 'assistant', toolCalls: calls }),
      turn(3, 'Checking. Rates are 4%.', { role: 'assistant', toolCalls: calls }),
    ]);
    expect(parseTranscript(text)).toEqual([
      { role: 'user', content: 'What are the rates?' },
      { role: 'assistant', content: 'Checking. Rates are 4%.' },
    ]);
  });
});
