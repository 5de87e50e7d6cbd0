// Terminal output with ANSI colours: SGR sequences (ESC [ … m) become styled segments, every
// other escape sequence (cursor moves, titles) is dropped. Segments are text: the page draws
// them as spans, never as HTML.

export interface Segment {
  text: string;
  fg: string | null;
  bg: string | null;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
}

const BASIC = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5"];
const BRIGHT = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"];

function color256(n: number): string | null {
  if (n < 0 || n > 255) return null;
  if (n < 8) return BASIC[n]!;
  if (n < 16) return BRIGHT[n - 8]!;
  if (n < 232) {
    const i = n - 16;
    const v = (k: number) => (k === 0 ? 0 : 55 + k * 40);
    return `rgb(${v(Math.floor(i / 36))},${v(Math.floor(i / 6) % 6)},${v(i % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

// CSI sequences, OSC sequences (ended by BEL or ST), and lone two-character escapes
// eslint-disable-next-line no-control-regex
const ESCAPE = /\x1b\[([0-9;:?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/** Does this text hold an escape sequence at all? (most tool output does not) */
export function hasAnsi(text: string): boolean {
  return text.includes("\x1b");
}

export function parseAnsi(text: string): Segment[] {
  const out: Segment[] = [];
  const state = { fg: null as string | null, bg: null as string | null, bold: false, dim: false, italic: false, underline: false };
  let last = 0;
  const push = (piece: string) => {
    if (piece) out.push({ text: piece, ...state });
  };
  for (const match of text.matchAll(ESCAPE)) {
    push(text.slice(last, match.index));
    last = match.index + match[0].length;
    if (match[2] !== "m") continue;
    const codes = (match[1] ?? "").split(/[;:]/).map((c) => (c === "" ? 0 : Number(c)));
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i]!;
      if (c === 0) Object.assign(state, { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false });
      else if (c === 1) state.bold = true;
      else if (c === 2) state.dim = true;
      else if (c === 3) state.italic = true;
      else if (c === 4) state.underline = true;
      else if (c === 22) state.bold = state.dim = false;
      else if (c === 23) state.italic = false;
      else if (c === 24) state.underline = false;
      else if (c >= 30 && c <= 37) state.fg = BASIC[c - 30]!;
      else if (c === 39) state.fg = null;
      else if (c >= 40 && c <= 47) state.bg = BASIC[c - 40]!;
      else if (c === 49) state.bg = null;
      else if (c >= 90 && c <= 97) state.fg = BRIGHT[c - 90]!;
      else if (c >= 100 && c <= 107) state.bg = BRIGHT[c - 100]!;
      else if (c === 38 || c === 48) {
        let value: string | null = null;
        if (codes[i + 1] === 5) {
          value = color256(codes[i + 2] ?? -1);
          i += 2;
        } else if (codes[i + 1] === 2) {
          const [r, g, b] = [codes[i + 2] ?? 0, codes[i + 3] ?? 0, codes[i + 4] ?? 0].map((v) => Math.max(0, Math.min(255, v)));
          value = `rgb(${r},${g},${b})`;
          i += 4;
        }
        if (c === 38) state.fg = value;
        else state.bg = value;
      }
    }
  }
  push(text.slice(last));
  return out;
}
