import { describe, expect, it } from 'vitest';
import { inFirstPerson, namedParticipant, withoutParticipantNames } from '../../../shared/domain/participants.js';

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

describe('inFirstPerson', () => {
  it('given a query naming a participant, puts their name as "I" and its possessive as "my"', () => {
    expect(inFirstPerson("What are Melanie's pets' names?", 'Melanie Smith')).toBe("What are my pets' names?");
    expect(inFirstPerson('What activities does melanie partake in?', 'Melanie Smith')).toBe('What activities does I partake in?');
  });

  it('given a role with its article, puts both as "I", and leaves other names and longer words alone', () => {
    expect(inFirstPerson('What did the user say to Caroline?', 'user')).toBe('What did I say to Caroline?');
    expect(inFirstPerson('Is Carolines a shop?', 'Caroline')).toBe('Is Carolines a shop?');
  });
});
