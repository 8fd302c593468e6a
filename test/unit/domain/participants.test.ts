import { describe, expect, it } from 'vitest';
import { namedParticipant, withoutParticipantNames } from '../../../shared/domain/participants.js';

const speakers = ['Caroline', 'Melanie Smith', 'user'];

describe('namedParticipant', () => {
  it('given a query naming one participant by first name, in any case or as a possessive, returns that participant', () => {
    expect(namedParticipant('What does melanie do to relax?', speakers)).toBe('Melanie Smith');
    expect(namedParticipant("What do Caroline's friends think?", speakers)).toBe('Caroline');
    expect(namedParticipant('What did the user say about dogs?', speakers)).toBe('user');
  });

  it('given a query naming none, or two, returns nothing', () => {
    expect(namedParticipant('What do dogs eat?', speakers)).toBeUndefined();
    expect(namedParticipant('What have Caroline and Melanie both painted?', speakers)).toBeUndefined();
    expect(namedParticipant('What did Carolines say?', speakers)).toBeUndefined();
  });
});

describe('withoutParticipantNames', () => {
  it('given a query with participant names and possessives, removes them and keeps every other word', () => {
    expect(withoutParticipantNames("What do Melanie's kids like?", speakers)).toBe('What do kids like?');
    expect(withoutParticipantNames('What have CAROLINE and Melanie both painted?', speakers)).toBe('What have and both painted?');
    expect(withoutParticipantNames('What did Caroline’s friend David say?', speakers)).toBe('What did friend David say?');
  });

  it('given a name inside a longer word, or no participants, leaves the query alone', () => {
    expect(withoutParticipantNames('Is Carolines a shop?', speakers)).toBe('Is Carolines a shop?');
    expect(withoutParticipantNames('What does Melanie like?', [])).toBe('What does Melanie like?');
  });

  it('given a query of names only, returns it unchanged, so there is still something to match', () => {
    expect(withoutParticipantNames('Caroline?', speakers)).toBe('Caroline?');
  });
});
