import { appendBody } from '../bench/fixtures.js';
import { mayReferToAnotherDay, periodsReferredTo } from '../../shared/domain/time-expressions.js';
const turns: { text: string; at: Date }[] = [];
for (let i = 0; i < 200; i++) { const { turns: ts } = JSON.parse(appendBody(`off-${i}`, i * 10, 10)); for (const t of ts) if (mayReferToAnotherDay(t.content)) turns.push({ text: t.content, at: new Date() }); }
periodsReferredTo(turns.slice(0, 20));
for (let r = 0; r < 5; r++) {
  const t0 = performance.now(); const c0 = process.cpuUsage();
  for (let i = 0; i < turns.length; i += 17) periodsReferredTo(turns.slice(i, i + 17));
  const c = process.cpuUsage(c0);
  console.log(turns.length, 'turns', (performance.now() - t0).toFixed(0), 'ms wall', ((c.user + c.system) / 1000).toFixed(0), 'ms cpu');
}
