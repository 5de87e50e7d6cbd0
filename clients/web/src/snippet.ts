// A search hit's snippet (search/query): plain text in which U+0002 starts and U+0003 ends
// each matched span, and nothing else is markup.

const START = "\u0002";
const END = "\u0003";

/**
 * A snippet's pieces: plain text and the matched spans (between U+0002 and U+0003). The
 * pieces are text — drawn as text nodes, escaped by construction — and the markers become
 * <mark> elements; nothing in a snippet is ever HTML.
 */
export function snippetPieces(snippet: string): { text: string; match: boolean }[] {
  const out: { text: string; match: boolean }[] = [];
  let match = false;
  let piece = "";
  for (const ch of snippet) {
    if (ch === START || ch === END) {
      if (piece) out.push({ text: piece, match });
      piece = "";
      match = ch === START;
    } else piece += ch;
  }
  if (piece) out.push({ text: piece, match });
  return out;
}

