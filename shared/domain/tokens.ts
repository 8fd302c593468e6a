import { countTokens as countO200k } from 'gpt-tokenizer';

/** Token count with the o200k_base encoding used by current OpenAI chat models. */
export const countTokens = (text: string): number => (text.length === 0 ? 0 : countO200k(text));
