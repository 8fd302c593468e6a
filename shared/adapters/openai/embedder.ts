import type { CreateEmbeddingResponse } from 'openai/resources/embeddings';
import type { Embedder } from '../../application/ports.js';
import { MemoryError } from '../../domain/errors.js';
import type { CallContext, ModelEndpoint } from './endpoint.js';

export interface EmbedderSettings {
  /** `azure-openai` or `openai`. */
  provider: string;
  /** Deployment (Azure) or model (OpenAI) name. */
  name: string;
  dimensions: number;
  requestDimensions: boolean;
  encoding: 'base64' | 'float';
  maxInputs: number;
  maxTokens: number;
}

/** Rough token estimate for batching (≈3 characters per token errs on the safe side for English). */
const approxTokens = (text: string) => Math.ceil(text.length / 3) + 1;

/**
 * Embedder on the embeddings endpoint. Batches by input count and an approximate token total, requests the configured
 * dimensions, and refuses vectors of any other size. Its `model` id names provider, model and size
 * (`azure-openai:embeddings@1536`), so stored vectors record what made them.
 */
export class OpenAIEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;

  constructor(
    private readonly endpoint: ModelEndpoint,
    private readonly settings: EmbedderSettings,
  ) {
    this.dimensions = settings.dimensions;
    this.model = `${settings.provider}:${settings.name}@${settings.dimensions}`;
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    const vectors: number[][] = [];
    // Sequential batches: gentler on rate limits, and a failure stops the rest.
    for (const batch of this.batches(texts)) vectors.push(...(await this.embedBatch(batch)));
    return vectors;
  }

  private *batches(texts: readonly string[]): Generator<string[]> {
    let batch: string[] = [];
    let tokens = 0;
    for (const text of texts) {
      const cost = approxTokens(text);
      if (batch.length > 0 && (batch.length >= this.settings.maxInputs || tokens + cost > this.settings.maxTokens)) {
        yield batch;
        batch = [];
        tokens = 0;
      }
      // The endpoint rejects empty strings; a blank text embeds as a single space.
      batch.push(text === '' ? ' ' : text);
      tokens += cost;
    }
    if (batch.length > 0) yield batch;
  }

  private embedBatch(inputs: string[]): Promise<number[][]> {
    const { name, dimensions, requestDimensions, encoding } = this.settings;
    const context: CallContext = { operation: 'embed', model: this.model };
    return this.endpoint.call(
      context,
      () =>
        this.endpoint.client.embeddings.create({
          model: name,
          input: inputs,
          ...(requestDimensions && { dimensions }),
          // Named, so the SDK returns base64 as it came: its own decoding went through an iterator and two arrays per
          // vector, a fifth of what the service's thread allocated under a hosted ingestion load.
          encoding_format: encoding,
        }),
      (response) => ({ inputTokens: response.usage?.prompt_tokens ?? 0, outputTokens: 0 }),
      (response) => this.vectors(response, inputs.length, context),
    );
  }

  /** The response's vectors in input order, each checked for the configured size. */
  private vectors(response: CreateEmbeddingResponse, count: number, context: CallContext): number[][] {
    const fail = (message: string, details: Record<string, unknown>) =>
      new MemoryError('upstream_unavailable', message, { operation: context.operation, model: context.model, ...details });
    const byIndex = new Map(response.data.map((d) => [d.index, d.embedding] as const));
    if (response.data.length !== count || byIndex.size !== count) {
      throw fail(`The embedding endpoint returned ${response.data.length} vectors for ${count} texts`, { expected: count, got: response.data.length });
    }
    return Array.from({ length: count }, (_, i) => {
      const sent = byIndex.get(i) as number[] | string | undefined;
      if (sent === undefined) throw fail(`The embedding endpoint returned no vector for input ${i}`, { index: i });
      const vector = typeof sent === 'string' ? float32s(sent) : sent;
      if (!vector) throw fail(`The embedding endpoint returned a base64 vector that is not whole float32s for input ${i}`, { index: i });
      if (vector.length !== this.dimensions) {
        throw fail(`The embedding model returned vectors of ${vector.length} dimensions, expected ${this.dimensions} (check EMBEDDING_DIMENSIONS and the embedding deployment)`, {
          expectedDimensions: this.dimensions,
          gotDimensions: vector.length,
        });
      }
      return vector;
    });
  }
}

/** A base64 embedding's little-endian float32s as numbers; undefined if its bytes are not whole float32s. */
function float32s(base64: string): number[] | undefined {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length % 4 !== 0) return undefined;
  const vector = new Array<number>(bytes.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(4 * i);
  return vector;
}
