import { describe, expect, it } from 'vitest';
import { LocalChatModel, LOCAL_LIMITS } from '../../../../shared/adapters/local-models/index.js';
import { CHAT_TASKS, type ChatTaskInput, type ChatTaskName } from '../../../../shared/application/model-tasks.js';
import type { ModelUsage } from '../../../../shared/application/ports.js';
import { MemoryError } from '../../../../shared/domain/errors.js';

const DEFAULT_CATEGORIES = ['demographics', 'financial_goals', 'risk_profile', 'current_situation', 'concern', 'preference'];

function model() {
  const usages: ModelUsage[] = [];
  return { chat: new LocalChatModel({ record: (u) => usages.push(u) }), usages };
}

const ADVISOR_WINDOW = [
  'user (Ana): Hi there!',
  'assistant: Hello Ana, how can I help you today?',
  "user (Ana): I'm 45, married with two kids, and I work as a nurse at Mercy Hospital in Denver.",
  'assistant: Thanks for sharing. What are your main financial goals?',
  "user (Ana): I want to retire at 60 and save for my daughter's college. She starts in 2030.",
  'assistant: A 529 plan is a tax-advantaged way to save for college. We could also review your 401k allocation.',
  "user (Ana): I have $200k in my 401k and a mortgage of $350,000. I'm worried about inflation.",
  'assistant: Inflation is a fair concern; TIPS and I bonds can hedge part of it.',
  "user (Ana): I'm fairly conservative, I can't stomach big losses.",
  "assistant: Understood, we'll keep the bond allocation higher.",
].join('\n');

/** The sentences of a summary with their speaker labels removed. */
const quoted = (summary: string) =>
  summary
    .replace(/^…\s*/, '')
    .split(/(?:User|Assistant): /)
    .flatMap((part) => part.split(/(?<=[.!?])\s+/))
    .map((s) => s.trim())
    .filter(Boolean);

async function insightsOf(statements: string[], categories = DEFAULT_CATEGORIES) {
  const { chat } = model();
  return chat.run('sessionInsights', { conversation: statements.map((s) => `user: ${s}`).join('\n'), categories });
}

describe('LocalChatModel — windowMetadata', () => {
  it('given a financial-advisor window, when asked for metadata, then quotes whole sentences within 320 chars and extracts topics and entities', async () => {
    const { chat } = model();
    const out = await chat.run('windowMetadata', { conversation: ADVISOR_WINDOW, previousSummary: '' });

    expect(out.summary.length).toBeLessThanOrEqual(LOCAL_LIMITS.windowSummaryChars);
    expect(out.summary).toMatch(/^User: /);
    for (const sentence of quoted(out.summary)) expect(ADVISOR_WINDOW).toContain(sentence);
    expect(out.summary).toContain('$200k in my 401k');
    expect(out.topics.length).toBeGreaterThan(0);
    expect(out.topics.length).toBeLessThanOrEqual(5);
    expect(out.topics).toEqual(expect.arrayContaining(['college', '401k']));
    expect(out.entities.length).toBeLessThanOrEqual(24);
    expect(out.entities).toEqual(expect.arrayContaining(['Mercy Hospital', 'Denver', '$200k', '$350,000', '2030', '401k', '529 plan']));
    expect(out.cumulativeSummary).toBe(out.summary);
    expect(CHAT_TASKS.windowMetadata.output.safeParse(out).success).toBe(true);
  });

  it('given the date plugin loaded later in the thread (its first period parse), when asked again, then the same metadata', async () => {
    const { chat } = model();
    const conversation = 'user: My partner earns about 28,000 a year.\nassistant: We moved to Berlin last May, next to the Mercy Hospital.';
    const before = await chat.run('windowMetadata', { conversation, previousSummary: '' });
    // compromise-dates extends compromise's one world (time-expressions.ts); its hook tags "about 28,000 a" as a date.
    await import('../../../../shared/domain/time-expressions.js');
    expect(await chat.run('windowMetadata', { conversation, previousSummary: '' })).toEqual(before);
    expect(before.entities).toEqual(expect.arrayContaining(['Berlin', 'Mercy Hospital', '28,000']));
  });

  it('given a long running summary, when a window is added, then keeps the newest whole sentences within 1,600 chars and ends with the new summary', async () => {
    const { chat } = model();
    let cumulative = '';
    const summaries: string[] = [];
    for (let i = 0; i < 12; i++) {
      const window = [
        `user: In week ${i} I moved $${i + 1},000 into the index fund number ${i}.`,
        `assistant: Noted for week ${i}: the transfer to index fund ${i} is confirmed and your allocation is now balanced.`,
      ].join('\n');
      const out = await chat.run('windowMetadata', { conversation: window, previousSummary: cumulative });
      summaries.push(out.summary);
      cumulative = out.cumulativeSummary;
    }

    expect(cumulative.length).toBeLessThanOrEqual(LOCAL_LIMITS.cumulativeSummaryChars);
    expect(cumulative.length).toBeGreaterThan(LOCAL_LIMITS.cumulativeSummaryChars / 2);
    expect(cumulative.endsWith(summaries.at(-1)!)).toBe(true);
    expect(cumulative).not.toContain('week 0 ');
    // Dropped sentences go whole, and the text after the ellipsis still says who spoke.
    expect(cumulative).toMatch(/^… (User|Assistant): [A-Z]/);
  });

  it('given the same window twice, when the running summary is extended, then its sentences are not repeated', async () => {
    const { chat } = model();
    const first = await chat.run('windowMetadata', { conversation: ADVISOR_WINDOW, previousSummary: '' });
    const second = await chat.run('windowMetadata', { conversation: ADVISOR_WINDOW, previousSummary: first.cumulativeSummary });
    expect(second.cumulativeSummary).toBe(first.cumulativeSummary);
  });

  it('given a window of tool output only, when asked for metadata, then still answers in the schema', async () => {
    const { chat } = model();
    const out = await chat.run('windowMetadata', { conversation: 'tool [for call_1]: {"balance": 1200}', previousSummary: '' });
    expect(out.summary.length).toBeGreaterThan(0);
    expect(out.cumulativeSummary).toBe(out.summary);
  });
});

describe('LocalChatModel — sessionSummary', () => {
  it('given a long session, when summarised, then the summary is bounded, chronological, and key topics are at most 8', async () => {
    const { chat } = model();
    const filler = Array.from({ length: 60 }, (_, i) => `assistant: Here is general market commentary number ${i} about sector rotation and earnings.`);
    const conversation = [ADVISOR_WINDOW, ...filler, 'user: Finally, please email me rather than call, I prefer email for follow-ups.'].join('\n');
    const out = await chat.run('sessionSummary', { conversation });

    expect(out.summary.length).toBeLessThanOrEqual(LOCAL_LIMITS.sessionSummaryChars);
    expect(out.keyTopics.length).toBeGreaterThan(0);
    expect(out.keyTopics.length).toBeLessThanOrEqual(8);
    const sentences = quoted(out.summary);
    const positions = sentences.map((s) => conversation.indexOf(s));
    expect(positions.every((p) => p >= 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(out.summary).toContain('401k');
    expect(CHAT_TASKS.sessionSummary.output.safeParse(out).success).toBe(true);
  });
});

describe('LocalChatModel — sessionInsights', () => {
  it.each([
    ["I'm 45, married with two kids.", 'demographics', /The user is 45, married with two kids/],
    ['I want to retire at 60.', 'financial_goals', /The user wants to retire at 60/],
    ["We need to save for my daughter's college.", 'financial_goals', /daughter's college/],
    ["I'm fairly conservative, I can't stomach big losses.", 'risk_profile', /The user is fairly conservative/],
    ['I have $200k in my 401k and a mortgage.', 'current_situation', /The user has \$200k in their 401k and a mortgage/],
    ["I'm worried about inflation.", 'concern', /The user is worried about inflation/],
    ['Please email me rather than call.', 'preference', /email me rather than call/],
  ])('given the user says "%s", when insights are extracted, then it is one %s insight', async (statement, category, text) => {
    const out = await insightsOf([statement]);
    expect(out.reflectionFlag).toBe('insight');
    expect(out.insights.map((i) => i.category)).toEqual([category]);
    expect(out.insights[0]!.text).toMatch(text);
  });

  it('given explicit first-person statements with numbers, then confidence is high and importance high; a hedged one scores lower', async () => {
    const out = await insightsOf(['I have $200k in my 401k.', 'Maybe I want to buy a boat someday, I guess.']);
    const [explicit, hedged] = out.insights;
    expect(explicit).toMatchObject({ category: 'current_situation', importance: 'high' });
    expect(explicit!.confidence).toBeGreaterThanOrEqual(0.8);
    expect(hedged).toMatchObject({ category: 'financial_goals' });
    expect(hedged!.confidence).toBeLessThan(explicit!.confidence);
    expect(hedged!.importance).not.toBe('high');
  });

  it('given small talk only, then the flag is no-insight with no insights', async () => {
    const { chat } = model();
    const out = await chat.run('sessionInsights', {
      conversation: ['user: Hi, how are you?', 'assistant: Great, thanks! How can I help?', 'user: The weather is lovely today.', 'user: Thanks, that was helpful. Bye!'].join('\n'),
      categories: DEFAULT_CATEGORIES,
    });
    expect(out).toEqual({ reflectionFlag: 'no-insight', insights: [] });
  });

  it("given facts only in the assistant's lines, then nothing is extracted (insights come from the user's statements)", async () => {
    const { chat } = model();
    const out = await chat.run('sessionInsights', {
      conversation: ["assistant: You mentioned you're worried about inflation and have $200k in your 401k.", 'user: Okay.'].join('\n'),
      categories: DEFAULT_CATEGORIES,
    });
    expect(out.reflectionFlag).toBe('no-insight');
  });

  it('given configured categories, then only those appear, and an unknown category is matched by the words of its name', async () => {
    const out = await insightsOf(
      ["I'm worried about inflation.", 'I want to retire at 60.', "I'm planning to travel to Japan next spring.", 'We just adopted a golden retriever puppy named Max.'],
      ['financial_goals', 'travel_plans', 'pets'],
    );
    expect(out.insights.map((i) => [i.category, i.text])).toEqual([
      ['financial_goals', 'The user wants to retire at 60.'],
      ['travel_plans', 'The user is planning to travel to Japan next spring.'],
      ['pets', 'The user said: "We just adopted a golden retriever puppy named Max."'],
    ]);
    for (const i of out.insights) expect(i.confidence).toBeLessThanOrEqual(0.95);
  });

  it('given the same fact said twice, then it is one insight', async () => {
    const out = await insightsOf(['I want to retire at 60.', 'Like I said, I want to retire at 60!']);
    expect(out.insights.filter((i) => i.category === 'financial_goals')).toHaveLength(1);
  });

  it('given a negated worry, then no concern is recorded', async () => {
    const out = await insightsOf(["I'm not worried about taxes at all."]);
    expect(out.insights.filter((i) => i.category === 'concern')).toEqual([]);
  });

  it('given two statements in one sentence, then each becomes its own insight', async () => {
    const out = await insightsOf(["I'm 45 and want to retire at 62, but I'm nervous about the stock market."]);
    expect(out.insights.map((i) => [i.category, i.text])).toEqual([
      ['demographics', 'The user is 45.'],
      ['financial_goals', 'The user wants to retire at 62.'],
      ['concern', 'The user is nervous about the stock market.'],
    ]);
  });

  it('given a long session, then at most 30 insights in the configured categories, all valid', async () => {
    const statements = Array.from({ length: 80 }, (_, i) => `I have $${i + 1}00k in account number ${i} at bank ${String.fromCharCode(65 + (i % 26))}.`);
    const out = await insightsOf(statements);
    expect(out.insights.length).toBeLessThanOrEqual(30);
    for (const i of out.insights) expect(DEFAULT_CATEGORIES).toContain(i.category);
    expect(CHAT_TASKS.sessionInsights.output.safeParse(out).success).toBe(true);
  });
});

describe('LocalChatModel — longTermProfile', () => {
  const insight = (id: string, category: string, text: string, day: number) => ({ id, category, text, createdAt: `2026-01-${String(day).padStart(2, '0')}T10:00:00Z` });

  it('given two different retirement ages, then the newer wins and the older id is superseded', async () => {
    const { chat } = model();
    const out = await chat.run('longTermProfile', {
      currentProfile: '',
      insights: [
        insight('a', 'financial_goals', 'The user wants to retire at 60.', 1),
        insight('b', 'demographics', 'The user is 45, married with two kids.', 1),
        insight('c', 'financial_goals', 'The user now plans to retire at 62.', 9),
      ],
    });
    expect(out.supersededInsightIds).toEqual(['a']);
    expect(out.profile).toContain('retire at 62');
    expect(out.profile).not.toContain('retire at 60');
    expect(out.profile).toBe(['Demographics:', '- The user is 45, married with two kids.', 'Financial goals:', '- The user now plans to retire at 62.'].join('\n'));
  });

  it("given a newer fact about someone else, or a compatible one, then nothing is superseded", async () => {
    const { chat } = model();
    const out = await chat.run('longTermProfile', {
      currentProfile: '',
      insights: [
        insight('me', 'demographics', 'The user is 45 and married.', 1),
        insight('job', 'demographics', 'The user works as a nurse.', 1),
        insight('sis', 'demographics', "The user's sister is 38 and divorced.", 5),
        insight('where', 'demographics', 'The user works at Mercy Hospital in Denver.', 6),
      ],
    });
    expect(out.supersededInsightIds).toEqual([]);
    expect(out.profile.split('\n')).toHaveLength(5);
  });

  it('judges "newer" by createdAt, not by list position', async () => {
    const { chat } = model();
    const out = await chat.run('longTermProfile', {
      currentProfile: '',
      insights: [insight('late', 'risk_profile', 'The user is aggressive with investments.', 20), insight('early', 'risk_profile', 'The user is very conservative.', 2)],
    });
    expect(out.supersededInsightIds).toEqual(['early']);
    expect(out.profile).toContain('aggressive');
  });

  it('given a current profile, then its lines are kept under their headings, new insights merged, and a contradicted line replaced', async () => {
    const { chat } = model();
    const currentProfile = ['Demographics:', '- The user is 45, married with two kids.', 'Preferences:', '- The user prefers phone calls.'].join('\n');
    const out = await chat.run('longTermProfile', {
      currentProfile,
      insights: [insight('p', 'preference', 'The user said: "Please email me rather than call."', 3), insight('g', 'financial_goals', 'The user wants to retire at 60.', 3)],
    });
    expect(out.profile).toBe(
      [
        'Demographics:',
        '- The user is 45, married with two kids.',
        'Financial goals:',
        '- The user wants to retire at 60.',
        'Preferences:',
        '- The user said: "Please email me rather than call."',
      ].join('\n'),
    );
    expect(out.supersededInsightIds).toEqual([]);
  });

  it('given a profile in another shape (prose from an LLM), then its sentences are kept as the earlier profile', async () => {
    const { chat } = model();
    const out = await chat.run('longTermProfile', {
      currentProfile: 'Ana is a nurse in Denver. She plans to retire at 60.',
      insights: [insight('x', 'financial_goals', 'The user wants to retire at 63.', 5)],
    });
    expect(out.profile).toBe(['Earlier profile:', '- Ana is a nurse in Denver.', 'Financial goals:', '- The user wants to retire at 63.'].join('\n'));
  });

  it('given nothing, then says so; given hundreds of insights, then stays bounded and lists only given ids', async () => {
    const { chat } = model();
    expect(await chat.run('longTermProfile', { currentProfile: '', insights: [] })).toEqual({ profile: 'No profile information yet.', supersededInsightIds: [] });
    const many = Array.from({ length: 300 }, (_, i) => insight(`i${i}`, DEFAULT_CATEGORIES[i % 6]!, `Fact number ${i} about topic ${i * 7} and detail ${i * 13}.`, 1 + (i % 28)));
    const out = await chat.run('longTermProfile', { currentProfile: '', insights: many });
    expect(out.profile.length).toBeLessThanOrEqual(2_000);
    for (const category of ['Demographics:', 'Financial goals:', 'Risk profile:', 'Current situation:', 'Concerns:', 'Preferences:']) expect(out.profile).toContain(category);
    for (const id of out.supersededInsightIds) expect(many.map((m) => m.id)).toContain(id);
  });
});

describe('LocalChatModel — run', () => {
  it('records one usage per call with the task as operation, the model id and estimated tokens', async () => {
    const { chat, usages } = model();
    await chat.run('sessionSummary', { conversation: ADVISOR_WINDOW });
    expect(usages).toHaveLength(1);
    expect(usages[0]).toMatchObject({ operation: 'sessionSummary', model: 'local-extractive-v2', ok: true });
    expect(usages[0]!.inputTokens).toBeGreaterThan(100);
    expect(usages[0]!.outputTokens).toBeGreaterThan(10);
    expect(usages[0]!.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('given an unknown task, then throws an internal error and records a failed call', async () => {
    const { chat, usages } = model();
    const run = chat.run as (task: string, input: unknown) => Promise<unknown>;
    await expect(run.call(chat, 'writePoem', {})).rejects.toMatchObject({ code: 'internal' });
    await expect(run.call(chat, 'toString', {})).rejects.toBeInstanceOf(MemoryError);
    expect(usages.map((u) => [u.operation, u.ok])).toEqual([
      ['writePoem', false],
      ['toString', false],
    ]);
  });

  it('given an input that fails the task schema, then throws instead of guessing', async () => {
    const { chat } = model();
    const bad = { conversation: 'user: hi', categories: [] } as unknown as ChatTaskInput<'sessionInsights'>;
    await expect(chat.run('sessionInsights', bad)).rejects.toMatchObject({ code: 'internal' });
  });

  it('compactArtifact: keeps the plugin description and adds the first line that shares a word with the goal', async () => {
    const out = await model().chat.run('compactArtifact', { goal: 'Why does checkout fail?', contentKind: 'log', excerpt: 'INFO start\nERROR checkout timeout\nERROR other', pluginDescription: 'Log of 3 lines' });
    expect(out).toEqual({ description: 'Log of 3 lines; relevant: ERROR checkout timeout' });
    expect(await model().chat.run('compactArtifact', { goal: 'unrelated words', contentKind: 'text', excerpt: 'a b c', pluginDescription: 'Text' })).toEqual({ description: 'Text' });
  });

  it('is deterministic: the same input gives the same output for every task', async () => {
    const inputs: { [K in ChatTaskName]: ChatTaskInput<K> } = {
      windowMetadata: { conversation: ADVISOR_WINDOW, previousSummary: 'User: Earlier we met.' },
      sessionSummary: { conversation: ADVISOR_WINDOW },
      sessionInsights: { conversation: ADVISOR_WINDOW, categories: DEFAULT_CATEGORIES },
      longTermProfile: { currentProfile: '', insights: [{ id: 'a', category: 'concern', text: 'Inflation.', createdAt: '2026-01-01T00:00:00Z' }] },
      compactArtifact: { goal: 'why does checkout fail', contentKind: 'log', excerpt: 'INFO start\nERROR checkout timeout', pluginDescription: 'Log of 2 lines, 1 error lines' },
    };
    for (const task of Object.keys(inputs) as ChatTaskName[]) {
      const a = await model().chat.run(task, inputs[task]);
      const b = await model().chat.run(task, inputs[task]);
      expect(b).toEqual(a);
    }
  });
});
