import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sessionEndOrchestrator } from '../../../functions/orch-session-end.js';
import { WORKFLOWS } from '../../../shared/application/workflows/index.js';
import { sessionEnd } from '../../../shared/application/workflows/session-end.js';
import type { StepInfo } from '../../../shared/application/workflows/workflow.js';
import { loadFunctions } from '../../../shared/platform/local-host/functions.js';
import { History, replay } from '../../support/durable-history.js';

const functionsDir = new URL('../../../functions/', import.meta.url);
const steps: StepInfo[] = WORKFLOWS.flatMap((w) => Object.values<StepInfo>(w.steps));
const key = { userId: 'u1', sessionId: 's1' };

describe('the workflow registry', () => {
  it('declares each step once: one name per step, one workflow per step', () => {
    const names = steps.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(steps).size).toBe(steps.length);
  });

  it('every activity function is built from exactly one step declaration, in the file named after it, and every step has one', async () => {
    const functions = await loadFunctions();
    const activities = functions.filter((f) => f.trigger.kind === 'activity').map((f) => f.name);
    const files = readdirSync(functionsDir).filter((f) => f.startsWith('activity-')).map((f) => f.replace(/\.ts$/, ''));
    expect(activities.sort()).toEqual(steps.map((s) => s.name).sort());
    expect(files.sort()).toEqual(activities);
    const orchestrations = functions.filter((f) => f.trigger.kind === 'orchestration').map((f) => f.name);
    expect(orchestrations.sort()).toEqual(WORKFLOWS.map((w) => w.name).sort());
  });

  it('orchestrators name no activity and cast no result: they call steps through callStep / callWorkflows only', () => {
    for (const file of readdirSync(functionsDir).filter((f) => f.startsWith('orch-'))) {
      const source = readFileSync(new URL(file, functionsDir), 'utf8');
      expect(source, file).not.toMatch(/callActivity|callSubOrchestrator|['"]activity-|\)\s+as\s+/);
      expect(source, file).toMatch(/yield\* call(Step|Workflows)\(/);
    }
  });
});

describe('callStep (replayed through the durable-functions engine)', () => {
  const prune = { chunkedThroughSeq: 12, interactionsWritten: 1 };
  const summary = { summary: 'A summary.', keyTopics: ['retirement'], reused: false };
  const reflection = { reflectionFlag: 'insight', insightIds: ['ins-1'], dropped: 0, reused: false };

  it('schedules each step under its declared name with its declared retry policy (none: a plain activity call)', async () => {
    const { steps: s } = sessionEnd;
    const h = new History(key).call(s.prune.name, prune).call(s.summarise.name, summary).call(s.reflect.name, reflection);
    const state = await replay(sessionEndOrchestrator, h);
    const declared = [s.prune, s.summarise, s.reflect, s.complete];
    expect(state.flat.map((a) => a.functionName)).toEqual(declared.map((d) => d.name));
    state.flat.forEach((action, i) => {
      const retry = declared[i]!.retry;
      if (retry) expect(action).toMatchObject({ actionType: 1, retryOptions: { maxNumberOfAttempts: retry.maxAttempts, firstRetryIntervalInMilliseconds: retry.firstRetryIntervalMs } });
      else expect(action).toMatchObject({ actionType: 0 });
    });
  });

  it("parses a step's result with its output schema: a result of the wrong shape fails the orchestration", async () => {
    const h = new History(key).call(sessionEnd.steps.prune.name, { chunkedThroughSeq: 'twelve', interactionsWritten: 1 });
    await expect(replay(sessionEndOrchestrator, h)).rejects.toThrow(/chunkedThroughSeq/);
  });

  it('drops what the output schema does not declare, so the orchestrator sees only typed fields', async () => {
    const h = new History(key)
      .call(sessionEnd.steps.prune.name, prune)
      .call(sessionEnd.steps.summarise.name, summary)
      .call(sessionEnd.steps.reflect.name, { ...reflection, insightIds: ['ins-1'], extra: 'not declared' })
      .call(sessionEnd.steps.complete.name, { status: 'completed', reflectionStatus: 'processed', extra: 'not declared' });
    const done = await replay(sessionEndOrchestrator, h);
    expect(done.output).not.toHaveProperty('extra');
    expect(sessionEnd.output.parse(done.output)).toEqual(done.output);
  });
});
