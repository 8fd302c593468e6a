/** What a group write says: each write's outcome (an Error fails that write's caller alone), or `refused`. */
export type GroupOutcome<R> = (R | Error)[] | 'refused';

export interface GroupedWrite<I, R> {
  /** One write alone; its failure is its caller's. */
  alone(item: I): Promise<R>;
  /**
   * The writes as one statement or transaction, in order. `refused`: nothing of it was written (the database rolled it
   * back, or it could not be sent), so each write is made again alone. A throw fails every caller of the group: the
   * outcome of a statement that may have committed is unknown, as it would be for one write.
   */
  group(items: readonly I[]): Promise<GroupOutcome<R>>;
  /** How many of the waiting writes (at least one) the next group takes. */
  take(items: readonly I[]): number;
}

/**
 * On PGlite statements run one at a time on the service's thread, and each has a fixed cost (its round trip, plan,
 * commit): writes that arrive in the same event-loop turn, or while a group is being written, are written together,
 * in arrival order. Each write's rows, locks and idempotency are as if it were alone.
 */
export class WriteGroups<I, R> {
  private waiting: { item: I; resolve: (outcome: R) => void; reject: (error: unknown) => void }[] = [];
  private writing = false;

  constructor(private readonly write: GroupedWrite<I, R>) {}

  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.writing) return;
      this.writing = true;
      setImmediate(() => void this.writeWaiting());
    });
  }

  private async writeWaiting(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting.splice(0, Math.max(1, this.write.take(this.waiting.map((w) => w.item))));
        if (group.length > 1) {
          let outcomes: GroupOutcome<R>;
          try {
            outcomes = await this.write.group(group.map((w) => w.item));
          } catch (error) {
            for (const w of group) w.reject(error);
            continue;
          }
          if (outcomes !== 'refused') {
            group.forEach((w, i) => {
              const outcome = outcomes[i] as R | Error;
              if (outcome instanceof Error) w.reject(outcome);
              else w.resolve(outcome);
            });
            continue;
          }
        }
        for (const w of group) await this.write.alone(w.item).then(w.resolve, w.reject);
      }
    } finally {
      this.writing = false;
    }
  }
}

/** An error the database raised (it carries a SQLSTATE): the statement was rolled back. */
export const isSqlState = (error: unknown) => typeof (error as { code?: unknown } | null)?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);
