import { describe, expect, it } from 'vitest';
import { nouns } from '../../../../shared/adapters/local-models/category-words.js';

describe('the nouns category words are looked up for', () => {
  it('given a turn, when its nouns are read, then common nouns, places and plurals are kept, in runs broken by punctuation', () => {
    expect(nouns('We spent a week in Spain.')).toEqual([['spain']]);
    expect(nouns('dogs, cats and birds')).toEqual([['dogs'], ['cats'], ['birds']]);
    expect(nouns("Spain's beaches are lovely.")).toEqual([['spain', 'beaches']]);
  });

  it('given two nouns in a row, then they are one run, so the pair is looked up first', () => {
    expect(nouns('I play video games.')).toEqual([['video', 'games']]);
    expect(nouns('I went to a support group.')).toEqual([['support', 'group']]);
  });

  it('given names of people, pronouns, dates and numbers, then they are left out', () => {
    expect(nouns('John called Caroline.')).toEqual([]);
    expect(nouns('She went on Monday with two friends.')).toEqual([['friends']]);
  });

  it('given a name written in lower case, then it is read as the noun it also is', () => {
    expect(nouns('She picked a rose for her.')).toEqual([['rose']]);
  });

  it('given a word that is a noun or a verb, when a determiner or preposition comes before it, then it is a noun', () => {
    expect(nouns('I went for a run.')).toEqual([['run']]);
    expect(nouns('Thanks for the support!')).toEqual([['support']]);
    expect(nouns('My love of painting.')).toEqual([['love'], ['painting']]);
  });

  it('given a word that is a noun or a verb, when a subject, "to" or a modal comes before it or an object after it, then it is a verb', () => {
    expect(nouns('I run every morning.')).toEqual([['morning']]);
    expect(nouns('I want to support them.')).toEqual([]);
    expect(nouns("Can't wait!")).toEqual([]);
    expect(nouns('The kids love it.')).toEqual([['kids']]);
    expect(nouns('Check this out!')).toEqual([]);
    expect(nouns('Hope you are well.')).toEqual([]);
  });

  it('given an adjective, then it is left out, unless a determiner makes it a noun with no noun after it', () => {
    expect(nouns('It was fun.')).toEqual([]);
    expect(nouns('It made a positive impact.')).toEqual([['impact']]);
    expect(nouns('Focus on the positive.')).toEqual([['positive']]);
  });

  it('given a verb the lexicon never reads as a noun, then it is a noun only after a determiner', () => {
    expect(nouns('We had a blast.')).toEqual([['blast']]);
    expect(nouns('We chat often.')).toEqual([]);
  });

  it('given two words the lexicon has together, then they are read as one ("a lot" is not a noun)', () => {
    expect(nouns('It means a lot.')).toEqual([]);
    expect(nouns('The parking lot was full.')).toEqual([['parking', 'lot']]);
  });

  it('given a gerund, then it is kept as a noun ("camping" is an activity)', () => {
    expect(nouns('We went camping.')).toEqual([['camping']]);
  });
});
