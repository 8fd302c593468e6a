import { describe, expect, it } from 'vitest';
import { FactSearchBody, RETRIEVE_USER_FACTS_TOOL } from '../../../shared/contracts/facts.js';

describe('RETRIEVE_USER_FACTS_TOOL', () => {
  it('offers only arguments the search body accepts, and a call with them is a valid search body', () => {
    const properties = Object.keys(RETRIEVE_USER_FACTS_TOOL.function.parameters.properties);
    expect(properties.every((p) => p in FactSearchBody.shape)).toBe(true);
    expect(FactSearchBody.safeParse({ query: 'Where does the user live?', topK: 3, mode: 'agent' }).success).toBe(true);
  });
});
