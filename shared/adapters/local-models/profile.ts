import type { ChatTaskInput, LongTermProfile } from '../../application/model-tasks.js';
import { jaccard, sentences, squash, terminate, terms } from './text.js';

interface Item {
  category: string;
  text: string;
  /** Set for new insights; profile lines carried over have none. */
  id?: string;
}

const LABELS: Record<string, string> = {
  demographics: 'Demographics',
  financial_goals: 'Financial goals',
  risk_profile: 'Risk profile',
  current_situation: 'Current situation',
  concern: 'Concerns',
  preference: 'Preferences',
};
const EARLIER = 'earlier_profile';
const ORDER = [EARLIER, ...Object.keys(LABELS)];

const labelOf = (category: string) =>
  category === EARLIER ? 'Earlier profile' : (LABELS[category] ?? category.replace(/[_-]+/g, ' ').replace(/^./, (c) => c.toUpperCase()));
const categoryOf = (label: string) =>
  label === 'Earlier profile' ? EARLIER : (Object.entries(LABELS).find(([, l]) => l === label)?.[0] ?? label.toLowerCase().replace(/\s+/g, '_'));

/**
 * Facts a statement fixes, as slot → value: two statements giving one slot different values contradict each other
 * ("retire at 60" / "retire at 62"). A small fixed list — the offline model does not understand other contradictions.
 */
const SLOTS: { slot: string; pattern: RegExp; value?: (m: RegExpExecArray) => string }[] = [
  { slot: 'retirement age', pattern: /\bretire\w*\s+(?:at|by|around)\s+(?:age\s+)?(\d{2})\b/i },
  { slot: 'retirement year', pattern: /\bretire\w*\s+(?:in|by|around)\s+((?:19|20)\d{2})\b/i },
  { slot: 'age', pattern: /\b(?:user is|user turned|user, aged|i'm|i am|i turned)\s+(\d{2})\b(?!\s*(?:%|k\b|years? (?:ago|from)))/i },
  { slot: 'marital status', pattern: /\b(married|divorced|widowed|single|engaged|separated)\b/i },
  { slot: 'children', pattern: /\b(no|one|two|three|four|five|six|\d)\s+(?:kids|children|child)\b/i },
  {
    slot: 'risk tolerance',
    pattern: /\b(very conservative|conservative|moderate|aggressive|cautious|risk[- ]averse|risk[- ]tolerant)\b/i,
    value: (m) => m[1]!.toLowerCase().replace(/cautious|risk[- ]averse/, 'conservative').replace(/risk[- ]tolerant/, 'aggressive'),
  },
  {
    slot: 'contact channel',
    pattern: /\b(?:prefer\w*|rather|please|by|via)\b.*?\b(e-?mail|phone|call|text|in person|video)/i,
    value: (m) => m[1]!.toLowerCase().replace('call', 'phone').replace('-', ''),
  },
  { slot: 'meeting frequency', pattern: /\b(weekly|monthly|quarterly|annually|yearly|every (?:week|month|quarter|year)|once a (?:week|month|quarter|year)|twice a (?:month|year))\b/i },
  { slot: 'residence', pattern: /\b(?:lives?|living|moved|based)\s+(?:in|to)\s+([A-Z][\w-]+(?:\s+[A-Z][\w-]+)*)/ },
  { slot: 'occupation', pattern: /\bworks?\s+as\s+(?:an?\s+)?([\w-]+)/i },
  { slot: 'employer', pattern: /\bworks?\b[^.]*?\b(?:at|for)\s+([A-Z][\w&-]*(?:\s+[A-Z][\w&-]*)*)/ },
  { slot: 'income', pattern: /\b(?:earns?|makes?|salary (?:is|of))\s+(?:about\s+|around\s+|roughly\s+)?([$£€]\s?[\d,.]+\s?[km]?)/i },
  { slot: '401k balance', pattern: /([$£€]\s?[\d,.]+\s?[km]?)\s+in\s+(?:their\s+|my\s+|a\s+)?401\(?k\)?/i },
];

/** Someone other than the user: a fact after such a word may be theirs ("their sister is divorced"). */
const OTHER_PERSON = /\b(wife|husband|spouse|partner|sister|brother|son|daughter|kids?|children|friend|mother|father|mom|dad|parents?|cousin|colleague|neighbou?r|boss|grand\w+)\b/i;

function slots(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const { slot, pattern, value } of SLOTS) {
    if (found.has(slot)) continue;
    const m = pattern.exec(text);
    if (!m || OTHER_PERSON.test(text.slice(0, m.index + m[0].indexOf(m[1]!)))) continue;
    found.set(slot, value ? value(m) : m[1]!.toLowerCase());
  }
  return found;
}

const PROFILE_BUDGET = 2_000;

/**
 * The long-term profile, rebuilt deterministically: the current profile's lines and the new insights (oldest first),
 * grouped by category under `Label:` headings with `- ` items. A newer statement that gives a fact a different value
 * (retirement age, age, marital status, risk tolerance, contact channel, …) replaces the older one, whose id is
 * returned as superseded; a near-identical older statement is dropped from the text (not superseded). Newest items
 * are kept first when the profile outgrows its budget. It joins statements; it does not write prose.
 */
export function synthesiseProfile(input: ChatTaskInput<'longTermProfile'>): LongTermProfile {
  const items: Item[] = [...parseProfile(input.currentProfile)];
  const byTime = input.insights.map((insight, i) => ({ insight, i })).sort((a, b) => a.insight.createdAt.localeCompare(b.insight.createdAt) || a.i - b.i);
  for (const { insight } of byTime) items.push({ category: insight.category, text: terminate(squash(insight.text)), id: insight.id });

  const superseded = new Set<string>();
  const dropped = new Set<Item>();
  for (let newer = items.length - 1; newer >= 0; newer--) {
    const n = items[newer]!;
    if (dropped.has(n)) continue;
    const nSlots = slots(n.text);
    const nTerms = terms(n.text);
    for (let older = newer - 1; older >= 0; older--) {
      const o = items[older]!;
      if (dropped.has(o)) continue;
      const oSlots = slots(o.text);
      const contradicts = [...nSlots].some(([slot, value]) => oSlots.has(slot) && oSlots.get(slot) !== value);
      const repeats = o.category === n.category && jaccard(terms(o.text), nTerms) >= 0.8;
      if (!contradicts && !repeats) continue;
      dropped.add(o);
      if (contradicts && o.id) superseded.add(o.id);
    }
  }

  const live = items.filter((i) => !dropped.has(i));
  // Within the budget, newest first, taking from every category in turn so none is crowded out.
  const byCategory = new Map<string, Item[]>();
  for (const item of [...live].reverse()) byCategory.set(item.category, [...(byCategory.get(item.category) ?? []), item]);
  const chosen = new Set<Item>();
  let used = 0;
  for (let round = 0, added = true; added; round++) {
    added = false;
    for (const [category, list] of byCategory) {
      const item = list[round];
      if (!item) continue;
      const cost = item.text.length + 3 + (round === 0 ? labelOf(category).length + 2 : 0);
      if (used + cost > PROFILE_BUDGET) continue;
      chosen.add(item);
      used += cost;
      added = true;
    }
  }
  const categories = [...byCategory.keys()].sort((a, b) => rank(a) - rank(b));
  const sections = categories
    .map((category) => ({ category, lines: live.filter((i) => i.category === category && chosen.has(i)) }))
    .filter((s) => s.lines.length > 0)
    .map((s) => [`${labelOf(s.category)}:`, ...s.lines.map((i) => `- ${i.text}`)].join('\n'));
  return { profile: sections.join('\n') || 'No profile information yet.', supersededInsightIds: [...superseded] };
}

const rank = (category: string) => {
  const i = ORDER.indexOf(category);
  return i >= 0 ? i : ORDER.length;
};

/** Lines of a profile in this format (`Label:` then `- item`); a profile in any other shape becomes its sentences. */
function parseProfile(profile: string): Item[] {
  const text = profile.trim();
  if (!text || text === 'No profile information yet.') return [];
  const items: Item[] = [];
  let category: string | undefined;
  let structured = true;
  for (const line of text.split(/\r?\n/)) {
    const heading = /^([A-Z][^:]{0,60}):$/.exec(line.trim());
    const bullet = /^-\s+(.+)$/.exec(line.trim());
    if (heading) category = categoryOf(heading[1]!);
    else if (bullet && category) items.push({ category, text: squash(bullet[1]!) });
    else if (line.trim()) structured = false;
  }
  if (structured && items.length > 0) return items;
  return sentences(text).map((s) => ({ category: EARLIER, text: terminate(squash(s)) }));
}
