import * as df from 'durable-functions';
import type { OrchestrationContext, Task } from 'durable-functions';
import { z } from 'zod';
import type { RetryPolicy, Step, StepInfo, Workflow } from '../application/workflows/workflow.js';
import type { OrchestrationClient } from '../application/operation-ports.js';
import { getRuntime, type Runtime } from './composition.js';
import { orchestrationClient } from './durable.js';
import { activity, defineFunction, type ActivityHandler } from './functions.js';

/**
 * The durable side of the workflow modules (shared/application/workflows): orchestrators call steps and child
 * workflows through these helpers, and every activity function is built from its step's declaration.
 */

/** What an orchestrator generator yields and is resumed with. */
export type Orchestration<T> = Generator<Task, T, unknown>;

export function retryOptions(policy: RetryPolicy): df.RetryOptions {
  const retry = new df.RetryOptions(policy.firstRetryIntervalMs, policy.maxAttempts);
  retry.backoffCoefficient = policy.backoffCoefficient;
  retry.maxRetryIntervalInMilliseconds = policy.maxRetryIntervalMs;
  return retry;
}

/**
 * Calls a step from an orchestrator (`const r = yield* callStep(context, step, input)`): the input is checked, the
 * step's activity is scheduled under its name (with its retry policy, if any), and its result is parsed with the
 * step's output schema. Deterministic: parsing the same history gives the same values.
 */
export function* callStep<I, O>(context: OrchestrationContext, step: StepInfo<I, O>, input: I): Orchestration<O> {
  const checked = step.input.parse(input);
  const result: unknown = yield step.retry ? context.df.callActivityWithRetry(step.name, retryOptions(step.retry), checked) : context.df.callActivity(step.name, checked);
  return step.output.parse(result);
}

/**
 * Runs child workflows side by side (`yield* callWorkflows(context, workflow, [{ input, instanceId }])`): one
 * sub-orchestration each under the given instance id, results parsed with the workflow's output schema, in call order.
 */
export function* callWorkflows<In, Out>(
  context: OrchestrationContext,
  child: Pick<Workflow<In, Out, Record<string, StepInfo>>, 'name' | 'input' | 'output'>,
  calls: readonly { input: In; instanceId: string }[],
): Orchestration<Out[]> {
  const tasks = calls.map(({ input, instanceId }) => context.df.callSubOrchestrator(child.name, child.input.parse(input), instanceId));
  const results: unknown = yield context.df.Task.all(tasks);
  return z.array(child.output).parse(results);
}

/**
 * The activity function of a step (functions/<step.name>.ts is `export default activityFunction(step)`): the input
 * parsed with its schema, the step run against the runtime, and its result checked before it enters the history.
 * `log`, if given, writes one line per run (ids and counts only).
 */
export function activityFunction<I, O>(step: Step<Runtime, I, O>, log?: (input: I, output: O) => string) {
  const handler: ActivityHandler = async (raw, ctx) => {
    const input = step.input.parse(raw);
    const output = step.output.parse(await step.run(await getRuntime(), input));
    if (log) ctx.log(log(input, output));
    return output;
  };
  return defineFunction({ name: step.name, trigger: activity(), handler });
}

/**
 * The activity function of a step that also needs the orchestration client (forget: purging and scanning durable
 * instance histories): in Azure a durable client input binding, at home the local runner.
 */
export function activityFunctionWithClient<I, O>(step: Step<Runtime & { orchestrations: OrchestrationClient }, I, O>, log?: (input: I, output: O) => string) {
  const handler: ActivityHandler = async (raw, ctx) => {
    const input = step.input.parse(raw);
    const output = step.output.parse(await step.run({ ...(await getRuntime()), orchestrations: orchestrationClient(ctx) }, input));
    if (log) ctx.log(log(input, output));
    return output;
  };
  return defineFunction({ name: step.name, trigger: activity({ durableClient: true }), handler });
}
