// A line diff for tool cards (an edit's old and new text): common head and tail trimmed, the
// middle by longest common subsequence, or shown as removed-then-added when it is too large
// to compare cheaply.

export interface DiffLine {
  op: " " | "+" | "-";
  text: string;
}

const MAX_CELLS = 4_000_000;

export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before === "" ? [] : before.split("\n");
  const b = after === "" ? [] : after.split("\n");
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const out: DiffLine[] = a.slice(0, head).map((text) => ({ op: " ", text }));
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  if (x.length * y.length > MAX_CELLS) {
    for (const text of x) out.push({ op: "-", text });
    for (const text of y) out.push({ op: "+", text });
  } else {
    // lengths of the LCS of x[i:] and y[j:], one row of y per i
    const w = y.length + 1;
    const lcs = new Uint32Array((x.length + 1) * w);
    for (let i = x.length - 1; i >= 0; i--) {
      for (let j = y.length - 1; j >= 0; j--) {
        lcs[i * w + j] = x[i] === y[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i] === y[j]) {
        out.push({ op: " ", text: x[i]! });
        i++;
        j++;
      } else if (i < x.length && (j === y.length || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) {
        out.push({ op: "-", text: x[i]! }); // removals before additions, as diffs read
        i++;
      } else {
        out.push({ op: "+", text: y[j]! });
        j++;
      }
    }
  }
  for (const text of a.slice(a.length - tail)) out.push({ op: " ", text });
  return out;
}

/** Unchanged runs longer than 2 × `context` lines are folded to their ends. */
export function foldContext(lines: DiffLine[], context = 3): (DiffLine | { op: "…"; count: number })[] {
  const out: (DiffLine | { op: "…"; count: number })[] = [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i]!.op !== " ") {
      out.push(lines[i]!);
      i++;
      continue;
    }
    let j = i;
    while (j < lines.length && lines[j]!.op === " ") j++;
    const run = j - i;
    const keepHead = i === 0 ? 0 : context;
    const keepTail = j === lines.length ? 0 : context;
    if (run > keepHead + keepTail + 1) {
      out.push(...lines.slice(i, i + keepHead));
      out.push({ op: "…", count: run - keepHead - keepTail });
      out.push(...lines.slice(j - keepTail, j));
    } else out.push(...lines.slice(i, j));
    i = j;
  }
  return out;
}
