// Tool calls as cards, by what the tool does: edits as a diff, shell commands as a terminal
// (ANSI colours, long output folded), reads as numbered code, anything else as its arguments
// and result. Every card keeps the call and its result as stored one click away. Names cover
// Pi (edit, write, bash, read), Claude Code (Edit, MultiEdit, Write, Bash, Read) and Codex
// (apply_patch, shell, exec_command, shell_command, local_shell).

import { useState } from "preact/hooks";
import { hasAnsi, parseAnsi } from "./ansi.ts";
import { foldContext, lineDiff, type DiffLine } from "./diff.ts";
import { languageOf } from "./lang.ts";
import { highlight, useRich } from "./markdown.tsx";

type Obj = Record<string, unknown>;

const EDIT = new Set(["edit", "multiedit", "write", "create_file", "str_replace_editor", "apply_patch", "notebookedit"]);
const SHELL = new Set(["bash", "shell", "exec", "exec_command", "shell_command", "local_shell", "container.exec", "run_command"]);
const READ = new Set(["read", "read_file", "view"]);

export type ToolKind = "edit" | "shell" | "read" | "other";

export function toolKind(name: string): ToolKind {
  const n = name.toLowerCase();
  if (EDIT.has(n)) return "edit";
  if (SHELL.has(n)) return "shell";
  if (READ.has(n)) return "read";
  return "other";
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

export function resultText(result: Obj | undefined): string {
  const content = result?.["content"];
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return (content as Obj[])
    .filter((b) => b["type"] === "text")
    .map((b) => String(b["text"] ?? ""))
    .join("\n");
}

function resultImages(result: Obj | undefined): Obj[] {
  const content = result?.["content"];
  return Array.isArray(content) ? (content as Obj[]).filter((b) => b["type"] === "image") : [];
}

function pathOf(args: Obj): string | null {
  return str(args["file_path"]) ?? str(args["path"]) ?? str(args["filePath"]) ?? str(args["notebook_path"]);
}

function commandOf(args: Obj): string | null {
  const c = args["command"] ?? args["cmd"];
  if (typeof c === "string") return c;
  if (Array.isArray(c)) {
    const parts = c.map(String);
    // ["bash", "-lc", "the script"]: the script is what was run
    if (parts.length === 3 && /(^|\/)(ba|z)?sh$/.test(parts[0]!) && parts[1]!.startsWith("-")) return parts[2]!;
    return parts.join(" ");
  }
  return null;
}

/** The edits an edit call makes, as (old, new) text pairs. */
function editsOf(name: string, args: Obj): { before: string; after: string }[] {
  const n = name.toLowerCase();
  if (n === "write" || n === "create_file") return [{ before: "", after: str(args["content"]) ?? str(args["file_text"]) ?? "" }];
  const list = Array.isArray(args["edits"]) ? (args["edits"] as Obj[]) : [args];
  return list.map((e) => ({
    before: str(e["old_string"]) ?? str(e["oldText"]) ?? str(e["old_str"]) ?? "",
    after: str(e["new_string"]) ?? str(e["newText"]) ?? str(e["new_str"]) ?? str(e["new_source"]) ?? "",
  }));
}

function patchOf(args: Obj): string | null {
  return str(args["input"]) ?? str(args["patch"]);
}

/** Codex wraps shell output as JSON ({output, metadata: {exit_code}}) in some versions. */
function shellOutput(text: string): { output: string; exit: number | null } {
  if (text.startsWith("{")) {
    try {
      const parsed = JSON.parse(text) as Obj;
      if (typeof parsed["output"] === "string") {
        const meta = parsed["metadata"] as Obj | undefined;
        return { output: parsed["output"], exit: typeof meta?.["exit_code"] === "number" ? meta["exit_code"] : null };
      }
    } catch {
      // not JSON: plain output
    }
  }
  // "Exit code: 1" (Codex's shell), "Process exited with code 1" (its exec_command)
  const exit = /^(?:Exit code:|Process exited with code) (-?\d+)/m.exec(text.slice(0, 400));
  return { output: text, exit: exit ? Number(exit[1]) : null };
}

const FOLD_LINES = 24;

/** Text that shows its first lines and a button for the rest. */
function Folded({ lines, render }: { lines: string[]; render: (lines: string[]) => unknown }) {
  const [all, setAll] = useState(false);
  const cut = !all && lines.length > FOLD_LINES + 6;
  return (
    <>
      {render(cut ? lines.slice(0, FOLD_LINES) : lines)}
      {cut ? (
        <button class="link fold" onClick={() => setAll(true)}>
          show all {lines.length} lines ({lines.length - FOLD_LINES} more)
        </button>
      ) : null}
    </>
  );
}

export function AnsiText({ text }: { text: string }) {
  if (!hasAnsi(text)) return <>{text}</>;
  return (
    <>
      {parseAnsi(text).map((s, i) => {
        const style: Record<string, string> = {};
        if (s.fg) style["color"] = s.fg;
        if (s.bg) style["background"] = s.bg;
        const cls = [s.bold ? "b" : "", s.dim ? "d" : "", s.italic ? "i" : "", s.underline ? "u" : ""].join(" ").trim();
        return cls || s.fg || s.bg ? (
          <span key={i} class={cls} style={style}>
            {s.text}
          </span>
        ) : (
          s.text
        );
      })}
    </>
  );
}

function Terminal({ command, output, exit, error }: { command: string | null; output: string; exit: number | null; error: boolean }) {
  const lines = output.replace(/\n$/, "").split("\n");
  return (
    <div class="terminal">
      {command !== null ? (
        <pre class="term-cmd">
          <span class="prompt">$ </span>
          {command}
        </pre>
      ) : null}
      {output ? (
        <Folded
          lines={lines}
          render={(shown) => (
            <pre class="term-out">
              <AnsiText text={shown.join("\n")} />
            </pre>
          )}
        />
      ) : null}
      {exit !== null && exit !== 0 ? <div class="term-exit error-tag">exit {exit}</div> : error ? <div class="term-exit error-tag">failed</div> : null}
    </div>
  );
}

function DiffView({ lines, path }: { lines: DiffLine[]; path: string | null }) {
  useRich();
  const lang = path ? languageOf(path) : "";
  return (
    <div class="diff">
      {foldContext(lines).map((l, i) =>
        l.op === "…" ? (
          <div key={i} class="hunk">
            ⋯ {l.count} unchanged lines
          </div>
        ) : (
          <div key={i} class={l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx"}>
            <span class="sign">{l.op}</span>
            <span dangerouslySetInnerHTML={{ __html: highlight(l.text, lang) }} />
          </div>
        ),
      )}
    </div>
  );
}

function PatchView({ patch }: { patch: string }) {
  return (
    <div class="diff patch">
      {patch.split("\n").map((line, i) => {
        const cls = line.startsWith("***")
          ? "file"
          : line.startsWith("@@")
            ? "hunk"
            : line.startsWith("+")
              ? "add"
              : line.startsWith("-")
                ? "del"
                : "ctx";
        return (
          <div key={i} class={cls}>
            {line || " "}
          </div>
        );
      })}
    </div>
  );
}

const NUMBERED = /^\s*(\d+)[→\t](.*)$/;

/** A file as a tool read it: line numbers in a gutter (the tool's own, or from the offset). */
export function NumberedCode({ text, path, offset }: { text: string; path: string | null; offset: number }) {
  useRich();
  const raw = text.replace(/\n$/, "").split("\n");
  const matched = raw.filter((l) => NUMBERED.test(l)).length;
  let numbers: string[];
  let lines: string[];
  if (raw.length > 0 && matched >= raw.length * 0.8) {
    numbers = [];
    lines = [];
    for (const l of raw) {
      const m = NUMBERED.exec(l);
      numbers.push(m ? m[1]! : "");
      lines.push(m ? m[2]! : l);
    }
  } else {
    numbers = raw.map((_, i) => String(offset + i));
    lines = raw;
  }
  const lang = path ? languageOf(path) : "";
  return (
    <Folded
      lines={lines}
      render={(shown) => (
        <div class="numbered">
          <pre class="gutter">{numbers.slice(0, shown.length).join("\n")}</pre>
          <pre class="code">
            <code class="hljs" dangerouslySetInnerHTML={{ __html: highlight(shown.join("\n"), lang) }} />
          </pre>
        </div>
      )}
    />
  );
}

export function ImageView({ block }: { block: Obj }) {
  const mime = str(block["mimeType"]) ?? str(block["mediaType"]) ?? "";
  const data = str(block["data"]);
  if (!data || !/^image\/(png|jpeg|gif|webp)$/.test(mime)) return <div class="dim">[image {mime}]</div>;
  return <img class="attached-image" alt={`attached image (${mime})`} src={`data:${mime};base64,${data}`} />;
}

function PlainResult({ text }: { text: string }) {
  const lines = text.replace(/\n$/, "").split("\n");
  return (
    <Folded
      lines={lines}
      render={(shown) => (
        <pre class="result-text">
          <AnsiText text={shown.join("\n")} />
        </pre>
      )}
    />
  );
}

function summaryOf(kind: ToolKind, name: string, args: Obj): string {
  if (kind === "edit" || kind === "read") return pathOf(args) ?? (name === "apply_patch" ? (/\*\*\* \w+ File: (.+)/.exec(patchOf(args) ?? "")?.[1] ?? "") : "");
  if (kind === "shell") return str(args["description"]) ?? "";
  const first = Object.values(args).find((v) => typeof v === "string") as string | undefined;
  return first ? first.slice(0, 120) : "";
}

const ICON: Record<ToolKind, string> = { edit: "✎", shell: "❯", read: "▤", other: "⚙" };

/** One tool call with its result (when the result is at hand). */
export function ToolCard({ call, result }: { call: Obj; result?: Obj | undefined }) {
  useRich();
  const [raw, setRaw] = useState(false);
  const name = String(call["name"] ?? "?");
  const args = (call["arguments"] && typeof call["arguments"] === "object" ? call["arguments"] : {}) as Obj;
  const kind = toolKind(name);
  const error = result?.["isError"] === true;
  const text = resultText(result);
  let body: unknown;
  if (kind === "edit") {
    const patch = name.toLowerCase() === "apply_patch" ? patchOf(args) : null;
    body = patch !== null ? (
      <PatchView patch={patch} />
    ) : (
      editsOf(name, args).map((e, i) => <DiffView key={i} lines={lineDiff(e.before, e.after)} path={pathOf(args)} />)
    );
  } else if (kind === "shell") {
    const { output, exit } = shellOutput(text);
    body = <Terminal command={commandOf(args)} output={result === undefined ? "" : output} exit={exit} error={error} />;
  } else if (kind === "read" && result !== undefined && !error) {
    const offset = typeof args["offset"] === "number" ? Math.max(1, args["offset"]) : 1;
    body = <NumberedCode text={text} path={pathOf(args)} offset={offset} />;
  } else {
    body = Object.keys(args).length ? (
      <pre class="args">
        <code class="hljs" dangerouslySetInnerHTML={{ __html: highlight(JSON.stringify(args, null, 2).slice(0, 4000), "json") }} />
      </pre>
    ) : null;
  }
  const showResult = result !== undefined && kind !== "shell" && (error || (kind !== "read" && kind !== "edit")) && text !== "";
  return (
    <div class={`tool-call tool-${kind}${error ? " tool-error" : ""}`} data-tool-call={String(call["id"] ?? "")} data-tool-kind={kind}>
      <div class="tool-head">
        <span class="tool-icon" aria-hidden="true">
          {ICON[kind]}
        </span>
        <strong>{name}</strong>
        <span class="tool-summary">{summaryOf(kind, name, args)}</span>
        {result === undefined ? <span class="dim"> · no result here</span> : null}
        {error ? <span class="error-tag">error</span> : null}
        <button class="link raw-toggle" title="the call and its result as stored" onClick={() => setRaw(!raw)}>
          {raw ? "hide JSON" : "{ } JSON"}
        </button>
      </div>
      {raw ? (
        <pre class="raw">
          <code class="hljs" dangerouslySetInnerHTML={{ __html: highlight(JSON.stringify({ call, result }, null, 2), "json") }} />
        </pre>
      ) : (
        <>
          {body}
          {showResult ? (
            error ? (
              <pre class="result-text error-text">{text}</pre>
            ) : (
              <PlainResult text={text} />
            )
          ) : null}
          {resultImages(result).map((b, i) => (
            <ImageView key={i} block={b} />
          ))}
        </>
      )}
    </div>
  );
}
