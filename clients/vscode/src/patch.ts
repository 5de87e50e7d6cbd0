// A file as it was at a checkpoint, from the file now and `fileHistory/diff`'s unified diff
// (checkpoint → now) applied backwards: what the diff editor shows before a rewind.

export class PatchError extends Error {}

interface Hunk {
  /** 0-based index in the new file where the hunk's new side starts. */
  newStart: number;
  lines: string[];
}

function hunks(diff: string): Hunk[] {
  const out: Hunk[] = [];
  let current: Hunk | undefined;
  for (const line of diff.split("\n")) {
    const header = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (header) {
      const start = Number(header[1]);
      const count = header[2] === undefined ? 1 : Number(header[2]);
      // for an empty new side the header names the line before it
      current = { newStart: count === 0 ? start : start - 1, lines: [] };
      out.push(current);
    } else if (current !== undefined && /^[ +\-\\]/.test(line)) {
      current.lines.push(line);
    }
  }
  return out;
}

/**
 * The old side of a unified diff, given its new side: context and `-` lines in place of the
 * hunks, the rest of `now` kept. Throws PatchError when `now` does not match the diff.
 */
export function reverseApply(now: string, diff: string): string {
  const newLines = now.split("\n");
  const result: string[] = [];
  let at = 0;
  let oldMissingNewline = false;
  let newMissingNewline = false;
  for (const hunk of hunks(diff)) {
    if (hunk.newStart < at) throw new PatchError("the diff's hunks overlap");
    while (at < hunk.newStart) result.push(newLines[at++]!);
    let previous = " ";
    for (const line of hunk.lines) {
      const mark = line[0]!;
      const body = line.slice(1);
      if (mark === "\\") {
        if (previous === "-") oldMissingNewline = true;
        else if (previous === "+") newMissingNewline = true;
        else oldMissingNewline = newMissingNewline = true;
        continue;
      }
      if (mark === " " || mark === "+") {
        if (newLines[at] !== body) throw new PatchError(`the file does not match the diff at line ${at + 1}`);
        at++;
      }
      if (mark === " " || mark === "-") result.push(body);
      previous = mark;
    }
  }
  if (newMissingNewline) {
    // now has no final newline: its last line was consumed by the hunk
    while (at < newLines.length) result.push(newLines[at++]!);
    return result.join("\n") + (oldMissingNewline ? "" : "\n");
  }
  while (at < newLines.length) result.push(newLines[at++]!);
  const text = result.join("\n");
  return oldMissingNewline && text.endsWith("\n") ? text.slice(0, -1) : text;
}
