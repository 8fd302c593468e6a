import { describe, expect, it } from 'vitest';
import { compiledOnce, foldedWhenNeeded, isWithin, mayReferToAnotherDay, mayReferToPeriod, overlaps, periodNamedIn, periodReferredTo, periodsReferredTo, periodWords } from '../../../shared/domain/time-expressions.js';

const now = new Date('2026-11-22T10:00:00Z');

describe('periodNamedIn', () => {
  it('reads a named month, with or without its year, relative to now', () => {
    expect(periodNamedIn('What did I say last May?', now)).toEqual({ from: '2026-05-01T00:00:00.000Z', to: '2026-05-31T23:59:59.999Z' });
    expect(periodNamedIn('What did Mel paint in July 2023?', now)).toEqual({ from: '2023-07-01T00:00:00.000Z', to: '2023-07-31T23:59:59.999Z' });
  });

  it('reads a day, a year and a relative period', () => {
    expect(periodNamedIn('What painting did Melanie show on October 13, 2023?', now)).toEqual({ from: '2023-10-13T00:00:00.000Z', to: '2023-10-13T23:59:59.999Z' });
    expect(periodNamedIn('How often did she go to the beach in 2023?', now)).toEqual({ from: '2023-01-01T00:00:00.000Z', to: '2023-12-31T23:59:59.999Z' });
    expect(periodNamedIn('what did we discuss yesterday', now)).toEqual({ from: '2026-11-21T00:00:00.000Z', to: '2026-11-21T23:59:59.999Z' });
  });

  it('finds no period in a query that names none', () => {
    expect(periodNamedIn('When did Caroline go to the support group?', now)).toBeUndefined();
    expect(periodNamedIn('Does the user have a dog?', now)).toBeUndefined();
  });

  it('reads relative dates from the time it is given, and keeps future periods: plans', () => {
    expect(periodNamedIn('what did I cook last week?', new Date('2019-03-14T18:00:00Z'))).toEqual({ from: '2019-03-04T00:00:00.000Z', to: '2019-03-10T23:59:59.999Z' });
    expect(periodNamedIn('What are my plans for June?', now)).toEqual({ from: '2027-06-01T00:00:00.000Z', to: '2027-06-30T23:59:59.999Z' });
  });
});

describe('periodReferredTo', () => {
  // A Wednesday.
  const said = new Date('2021-09-15T16:30:00Z');
  const day = (d: string) => ({ from: `${d}T00:00:00.000Z`, to: `${d}T23:59:59.999Z` });

  it("resolves relative expressions against the turn's own time, not the clock", () => {
    expect(periodReferredTo('My flight got cancelled yesterday, so I drove.', said)).toEqual(day('2021-09-14'));
    expect(periodReferredTo('The roof started leaking three weeks ago', said)).toEqual(day('2021-08-25'));
    expect(periodReferredTo('Last week we finally signed the lease!', said)).toEqual({ from: '2021-09-06T00:00:00.000Z', to: '2021-09-12T23:59:59.999Z' });
    expect(periodReferredTo('We repainted the kitchen two years ago', said)?.from.slice(0, 4)).toBe('2019');
  });

  it('reads plans: future periods count', () => {
    expect(periodReferredTo("I'm starting the new job next month", said)).toEqual({ from: '2021-10-01T00:00:00.000Z', to: '2021-10-31T23:59:59.999Z' });
    expect(periodReferredTo('The recital is tomorrow and I am nervous', said)).toEqual(day('2021-09-16'));
    expect(periodReferredTo('I booked a flight for next month', said)?.from).toBe('2021-10-01T00:00:00.000Z'); // booked: past tense
  });

  it('reads absolute dates and years as they are', () => {
    expect(periodReferredTo('Back in 2014 I lived in Lisbon for a while.', said)).toEqual({ from: '2014-01-01T00:00:00.000Z', to: '2014-12-31T23:59:59.999Z' });
    expect(periodReferredTo('The clinic moved my appointment to 4 October.', said)).toEqual(day('2021-10-04'));
  });

  it('reads each sentence with a time word, in its own tense, with number words as digits', () => {
    const text = 'My sister visited with her two kids. We moved here three years ago! The barbecue on Saturday was a disaster.';
    expect(periodReferredTo(text, said)?.from.slice(0, 4)).toBe('2018');
    expect(periodReferredTo('Two friends came over. The barbecue on Saturday was a disaster', said)).toBeUndefined();
  });

  it("leaves out a text without time words, the turn's own day, and a future reading of a sentence in the past tense", () => {
    expect(periodReferredTo('Honestly I just want a quiet evening with a book.', said)).toBeUndefined();
    expect(periodReferredTo('I have been knitting for ten years and today I sold a scarf', said)).toBeUndefined();
    // A bare weekday is read forward (next Saturday); told in the past tense it cannot be.
    expect(periodReferredTo('The barbecue on Saturday was a disaster', said)).toBeUndefined();
    expect(periodReferredTo('The barbecue on Saturday will be fun', said)).toEqual(day('2021-09-18'));
  });
});

describe('periodsReferredTo', () => {
  it("reads turns parsed together as each alone: each sentence in its own tense and numbers, against its turn's own day", () => {
    const wednesday = new Date('2021-09-15T16:30:00Z');
    const friday = new Date('2021-09-17T09:00:00Z');
    const turns = [
      { text: 'We moved here three years ago! The barbecue on Saturday was a disaster.', at: wednesday },
      // Beside a number word ("first"), "a few" is read as a number, 3: alone, this names no period.
      { text: "Haven't talked in a few days. Crazy things happened to me!", at: wednesday },
      { text: 'I finally finished my first full screenplay and printed it last Friday.', at: wednesday },
      { text: 'Honestly I just want a quiet evening with a book.', at: wednesday },
      { text: 'My flight got cancelled yesterday, so I drove.', at: wednesday },
      { text: 'My flight got cancelled yesterday, so I drove.', at: friday },
      { text: 'The barbecue on Saturday will be fun', at: friday },
      { text: 'I have been knitting for ten years and today I sold a scarf', at: friday },
    ];
    const together = periodsReferredTo(turns);
    expect(together).toEqual(turns.map(({ text, at }) => periodReferredTo(text, at)));
    expect(together[1]).toBeUndefined();
    expect(together.slice(4, 7)).toEqual([
      { from: '2021-09-14T00:00:00.000Z', to: '2021-09-14T23:59:59.999Z' },
      { from: '2021-09-16T00:00:00.000Z', to: '2021-09-16T23:59:59.999Z' },
      { from: '2021-09-18T00:00:00.000Z', to: '2021-09-18T23:59:59.999Z' },
    ]);
  });

  it('reads more sentences than one document holds, in order', () => {
    const at = new Date('2021-09-15T16:30:00Z');
    const turns = Array.from({ length: 30 }, (_, i) => ({ text: i % 2 ? `It rained ${i + 2} days ago.` : 'No dates here at all.', at }));
    expect(periodsReferredTo(turns)).toEqual(turns.map(({ text }) => periodReferredTo(text, at)));
    expect(periodsReferredTo(turns)[29]?.from).toBe('2021-08-15T00:00:00.000Z');
  });
});

describe('compiledOnce', () => {
  const counted = () => {
    const compiled: string[] = [];
    const compile = (pattern: unknown, options?: object) => {
      compiled.push(`${JSON.stringify(options)} ${String(pattern)}`);
      return String(pattern)
        .split(' ')
        .map((word) => ({ word, ...options }));
    };
    return { compiled, compile };
  };

  it('compiles a pattern once for the same options (none are the empty ones), and gives each call tokens of its own', () => {
    const { compiled, compile } = counted();
    const once = compiledOnce(compile, 10);
    const first = once('#Date here', {});
    (first[0] as { start?: boolean }).start = true; // as compromise's growRight does
    expect(once('#Date here', {})).toEqual([{ word: '#Date' }, { word: 'here' }]);
    expect(once('#Date here', { fuzzy: 0.8 })).toEqual([
      { word: '#Date', fuzzy: 0.8 },
      { word: 'here', fuzzy: 0.8 },
    ]);
    expect(once('#Date here')).toEqual([{ word: '#Date' }, { word: 'here' }]); // no options are compromise's {}
    expect(compiled).toEqual(['{} #Date here', '{"fuzzy":0.8} #Date here']);
  });

  it('keeps only the last `limit` patterns, and passes what is not a string through', () => {
    const { compiled, compile } = counted();
    const once = compiledOnce(compile, 2);
    for (const pattern of ['a', 'b', 'c', 'b', 'a']) once(pattern);
    once(7);
    once(7);
    expect(compiled).toEqual(['undefined a', 'undefined b', 'undefined c', 'undefined a', 'undefined 7', 'undefined 7']);
  });
});

describe('foldedWhenNeeded', () => {
  it('gives what the fold gives, and folds only a text with a character the table changes', () => {
    const folded: string[] = [];
    const fold = (text: string) => {
      folded.push(text);
      return [...(text || '')].map((c) => ({ ö: 'o', é: 'e', i: 'i' })[c] ?? c).join('');
    };
    const whenNeeded = foldedWhenNeeded(fold, { ö: 'o', é: 'e', i: 'i' });
    for (const text of ['Björk', 'in June', 'café', '']) expect(whenNeeded(text), text).toBe(fold(text));
    expect(folded).toEqual(['Björk', 'Björk', 'in June', 'café', 'café', '', '']);
  });
});

describe('mayReferToPeriod', () => {
  it('is true for a text with a time word, whatever its case', () => {
    for (const text of ['We adopted a kitten yesterday!', 'I moved in 2019.', 'See you next WEEK', 'two years ago', 'The barbecue on Saturday', 'back in June', 'It rained all day.']) {
      expect(mayReferToPeriod(text), text).toBe(true);
    }
  });

  it('is false for a text without one, even when a word only contains one (mayor, sundae, daydream)', () => {
    for (const text of ['She plays the piano.', 'Does the user have a dog?', 'The mayor ordered a sundae.', 'A daydream about the marching band.', '']) {
      expect(mayReferToPeriod(text), text).toBe(false);
    }
  });
});

describe('mayReferToAnotherDay', () => {
  it('is true for a time word that names a day or a period, and for a unit with a word that places it', () => {
    for (const text of ['We adopted a kitten yesterday!', 'I moved in 2019.', 'See you next WEEK', 'two years ago', 'The barbecue on Saturday', 'back in June', 'I ran a marathon the day before.', 'In a month I start.']) {
      expect(mayReferToAnotherDay(text), text).toBe(true);
    }
  });

  it('is false for a sentence that only measures time or says today, which the parser reads as the turn’s own day', () => {
    const now = new Date('2026-05-20T15:00:00Z');
    for (const text of ['It rained all day.', 'We have a mortgage with twelve years left on it.', 'She earns about 28,000 a year.', 'I have played the guitar for three years.', 'Today was great!', 'What a day.', 'Two weeks of holiday!']) {
      expect(mayReferToPeriod(text), text).toBe(true);
      expect(mayReferToAnotherDay(text), text).toBe(false);
      // The parser, asked anyway, names no day but the turn's own, which periodReferredTo leaves out.
      const named = periodNamedIn(text, now);
      expect(named === undefined || (named.from.startsWith('2026-05-20') && named.to.startsWith('2026-05-20')), text).toBe(true);
    }
  });
});

describe('isWithin', () => {
  it('includes both ends and compares instants, whatever the offset', () => {
    const may = { from: '2026-05-01T00:00:00.000Z', to: '2026-05-31T23:59:59.999Z' };
    expect(isWithin(may, '2026-05-31T23:59:59.999Z')).toBe(true);
    expect(isWithin(may, '2026-06-01T01:00:00+02:00')).toBe(true);
    expect(isWithin(may, '2026-06-01T00:00:00Z')).toBe(false);
  });
});

describe('overlaps', () => {
  it('is true when the periods share an instant, ends included', () => {
    const may = { from: '2026-05-01T00:00:00.000Z', to: '2026-05-31T23:59:59.999Z' };
    expect(overlaps(may, { from: '2026-05-31T23:59:59.999Z', to: '2026-06-02T00:00:00.000Z' })).toBe(true);
    expect(overlaps(may, { from: '2026-01-01T00:00:00.000Z', to: '2026-12-31T23:59:59.999Z' })).toBe(true);
    expect(overlaps(may, { from: '2026-06-01T00:00:00.000Z', to: '2026-06-02T00:00:00.000Z' })).toBe(false);
  });
});

describe('periodWords', () => {
  it('names a day, a stretch within a month and up to three months without their year, and longer spans by their years', () => {
    expect(periodWords({ from: '2021-09-14T00:00:00.000Z', to: '2021-09-14T23:59:59.999Z' })).toBe('14 September');
    expect(periodWords({ from: '2021-09-06T00:00:00.000Z', to: '2021-09-12T23:59:59.999Z' })).toBe('September');
    expect(periodWords({ from: '2021-12-27T00:00:00.000Z', to: '2022-01-02T23:59:59.999Z' })).toBe('December January');
    expect(periodWords({ from: '2014-01-01T00:00:00.000Z', to: '2014-12-31T23:59:59.999Z' })).toBe('2014');
  });
});
