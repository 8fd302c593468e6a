import { describe, expect, it } from 'vitest';
import { answerStatement, asStatement } from '../../../shared/domain/statements.js';

describe('asStatement', () => {
  it('given a question word, its phrase and an auxiliary, puts the auxiliary after its subject and the phrase last', () => {
    expect(asStatement('What writing classes has Maria taken?')).toBe('Maria has taken writing classes');
    expect(asStatement('How many hikes has Joanna been on?')).toBe('Joanna has been on many hikes');
    expect(asStatement('Which cities would they visit?')).toBe('they would visit cities');
  });

  it('given a supporting "do", drops it', () => {
    expect(asStatement('What activities does Melanie partake in?')).toBe('Melanie partake in activities');
    expect(asStatement('Why did Gina open a store?')).toBe('Gina open a store');
  });

  it('given "I" as the subject, gives its auxiliary the first person', () => {
    expect(asStatement('What has I painted?')).toBe('I have painted');
    expect(asStatement('Is I happy?')).toBe('I am happy');
  });

  it('given a copula right after the question word, puts it after what it asks about', () => {
    expect(asStatement("What is Caroline's identity?")).toBe("Caroline's identity is");
  });

  it('given a yes/no question, puts its auxiliary after its subject', () => {
    expect(asStatement('Would Melanie enjoy a concert?')).toBe('Melanie would enjoy a concert');
    expect(asStatement('Did Jon win?')).toBe('Jon win');
  });

  it('given a question word with no auxiliary after its phrase, keeps the rest as it is', () => {
    expect(asStatement('Who supports Caroline when she has a hard time?')).toBe('supports Caroline when she has a hard time');
  });

  it('given no question, returns the text unchanged', () => {
    expect(asStatement('dogs and cats')).toBe('dogs and cats');
    expect(asStatement('')).toBe('');
  });
});

describe('answerStatement', () => {
  const speakers = ['Melanie', 'Caroline', 'user'];

  it('given a question about one participant, puts it as that participant would answer, in the first person', () => {
    expect(answerStatement('What activities does Melanie partake in?', speakers)).toBe('I partake in activities');
    expect(answerStatement("What are Melanie's pets' names?", speakers)).toBe("my pets' names are");
    expect(answerStatement('What has the user painted?', speakers)).toBe('I have painted');
  });

  it('given a question naming two participants, or none, leaves the names out of the statement', () => {
    // The subject is one word: the auxiliary follows the first name.
    expect(answerStatement('What have Caroline and Melanie both painted?', speakers)).toBe('have and both painted');
    expect(answerStatement('Which cities has Jon visited?', speakers)).toBe('Jon has visited cities');
  });

  it('given a query of names only, or no question, keeps it', () => {
    expect(answerStatement('Melanie?', speakers)).toBe('Melanie?');
    expect(answerStatement('dietary preferences', speakers)).toBe('dietary preferences');
  });
});
