/**
 * The first `max` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair: a lone surrogate is not
 * valid Unicode, and PostgreSQL refuses it in `jsonb` (an emoji cut in half in a description once made an append a 500).
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
