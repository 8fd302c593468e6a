import { describe, expect, it } from 'vitest';
import project from '../../../functions/cosmos-events-project.js';
import { CHANGE_FEED_RETRY, changeFeedOptions, cosmosChangeFeed } from '../../../shared/platform/functions.js';

const toMs = (d: { minutes?: number; seconds?: number }) => ((d.minutes ?? 0) * 60 + (d.seconds ?? 0)) * 1000;

describe('change-feed registration (the options app.cosmosDB gets in Azure)', () => {
  it('given cosmos-events-project, then it registers with an exponential-backoff retry, so a batch whose function threw is delivered again', () => {
    const options = changeFeedOptions(project.trigger, project.handler);
    expect(options.retry).toEqual({ strategy: 'exponentialBackoff', maxRetryCount: 10, minimumInterval: { seconds: 2 }, maximumInterval: { minutes: 2 } });
    expect(options).toMatchObject({
      connection: 'COSMOS',
      databaseName: '%COSMOS_DATABASE%',
      containerName: 'events',
      leaseContainerName: 'leases',
      createLeaseContainerIfNotExists: false,
      startFromBeginning: true,
    });
    expect(options.handler).toBe(project.handler);
  });

  it('retries a bounded number of times with growing waits, so one bad batch holds its lease range for minutes, not for ever', () => {
    expect(CHANGE_FEED_RETRY.maxRetryCount).toBeGreaterThan(0);
    expect(toMs(CHANGE_FEED_RETRY.minimumInterval)).toBeLessThan(toMs(CHANGE_FEED_RETRY.maximumInterval));
  });

  it('given a change-feed trigger with its own policy, then that policy is registered', () => {
    const retry = { strategy: 'exponentialBackoff', maxRetryCount: 3, minimumInterval: 500, maximumInterval: 5_000 } as const;
    expect(changeFeedOptions(cosmosChangeFeed('sessions', retry), project.handler)).toMatchObject({ containerName: 'sessions', retry });
  });
});
