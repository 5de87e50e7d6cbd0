import { useEffect, useState } from "preact/hooks";
import type { Rpc } from "./rpc.ts";
import type { TreeModel } from "./treemodel.ts";
import { CustomEntryBody, MessageBody } from "./messages.tsx";
import { Markdown } from "./markdown.tsx";
import { errorText, toast } from "./toast.tsx";
import { time } from "./format.ts";

type Entry = Record<string, unknown>;

/** One entry: what it holds, and on writable sessions continue / fork / label. */
export function EntryPanel({
  rpc,
  sessionId,
  model,
  entryId,
  readOnly,
  onOpen,
  onClose,
}: {
  rpc: Rpc;
  sessionId: string;
  model: TreeModel;
  entryId: string;
  readOnly: boolean;
  onOpen: (sessionId: string) => void;
  onClose: () => void;
}) {
  const [entry, setEntry] = useState<Entry | null>(null);
  const [results, setResults] = useState<Map<string, Entry>>(new Map());
  const [raw, setRaw] = useState(false);
  const [label, setLabel] = useState("");
  const [working, setWorking] = useState(false);
  const [forked, setForked] = useState<string | null>(null);
  const node = model.byId.get(entryId)!;

  useEffect(() => {
    let live = true;
    setEntry(null);
    setForked(null);
    setLabel(node.label ?? "");
    const load = async () => {
      // tree/get lists entries in file order, so the node's position is its offset
      const offset = model.order.indexOf(entryId);
      let found: Entry | undefined;
      const paired = new Map<string, Entry>();
      if (offset >= 0) {
        // the entry and a few after it: where the results of its tool calls are
        const page = await rpc.request("session/entries", { sessionId, offset, limit: 40 });
        const first = page.entries[0] as Entry | undefined;
        if (first !== undefined && first["id"] === entryId) found = first;
        for (const e of page.entries.slice(1) as Entry[]) {
          const m = e["message"] as Entry | undefined;
          if (m?.["role"] === "toolResult" && typeof m["toolCallId"] === "string") paired.set(m["toolCallId"], m);
          const more = (e["data"] as Entry | undefined)?.["messages"];
          if (Array.isArray(more)) {
            for (const r of more as Entry[]) if (typeof r["toolCallId"] === "string") paired.set(r["toolCallId"], r);
          }
        }
      }
      if (live) setResults(paired);
      if (found === undefined) {
        const branch = await rpc.request("tree/branch", { sessionId, entryId, full: true });
        found = (branch.entries ?? []).at(-1) as Entry | undefined;
      }
      if (live) setEntry(found ?? { id: entryId, type: node.type });
    };
    load().catch((err: unknown) => toast(errorText(err), "error"));
    return () => {
      live = false;
    };
  }, [rpc, sessionId, entryId]);

  const act = async (what: string, work: () => Promise<string | void>) => {
    setWorking(true);
    try {
      const message = await work();
      toast(message ?? `${what}: done`);
    } catch (err) {
      toast(errorText(err), "error");
    } finally {
      setWorking(false);
    }
  };

  const message = entry?.["message"] as Entry | undefined;
  const isUser = node.type === "message" && node.role === "user";
  const disabled = readOnly || working;
  const why = readOnly ? "Read-only: another agent's session" : undefined;

  return (
    <div class="entry-panel" data-entry={entryId}>
      <div class="entry-head">
        <strong>{node.type === "message" ? node.role : node.type}</strong>
        <code class="dim">{entryId}</code>
        <span class="dim">{time(node.timestamp)}</span>
        <button class="close" aria-label="close" onClick={onClose}>
          ×
        </button>
      </div>
      <div class="entry-actions">
        <button
          data-action="navigate"
          disabled={disabled || model.continuesFrom() === entryId}
          title={why ?? "Move the leaf here: the next message continues from this entry (Pi's /tree)"}
          onClick={() =>
            act("navigate", async () => {
              const r = await rpc.request("tree/navigate", { sessionId, targetId: entryId });
              return r.editorText
                ? `Continuing before this prompt (its text is back in the editor): ${r.editorText.slice(0, 60)}`
                : `Continuing from ${entryId}`;
            })
          }
        >
          Continue from here
        </button>
        <button
          data-action="fork"
          disabled={disabled || !isUser}
          title={why ?? (isUser ? "A new session with the history before this prompt" : "Fork works before a user prompt")}
          onClick={() =>
            act("fork", async () => {
              const r = await rpc.request("session/fork", { sessionId, entryId, position: "before" });
              setForked(r.sessionId);
              return `Forked into ${r.sessionId}`;
            })
          }
        >
          Fork before this prompt
        </button>
        <button
          data-action="clone"
          disabled={disabled}
          title={why ?? "A new session holding the path up to this entry"}
          onClick={() =>
            act("clone", async () => {
              const r = await rpc.request("session/fork", { sessionId, entryId, position: "at" });
              setForked(r.sessionId);
              return `Cloned into ${r.sessionId}`;
            })
          }
        >
          Clone up to here
        </button>
        {forked ? (
          <button data-action="open-fork" data-forked={forked} onClick={() => onOpen(forked)}>
            Open {forked.slice(0, 8)}…
          </button>
        ) : null}
      </div>
      <form
        class="label-form"
        onSubmit={(e) => {
          e.preventDefault();
          void act("label", async () => {
            await rpc.request("tree/label", { sessionId, entryId, label: label.trim() || null });
            return label.trim() ? `Labelled “${label.trim()}”` : "Label cleared";
          });
        }}
      >
        <input
          aria-label="label"
          placeholder={readOnly ? "read-only" : "label this entry"}
          value={label}
          disabled={disabled}
          onInput={(e) => setLabel(e.currentTarget.value)}
        />
        <button type="submit" data-action="label" disabled={disabled} title={why}>
          {label.trim() ? "Set label" : "Clear label"}
        </button>
      </form>
      <div class="entry-body">
        {entry === null ? (
          <div class="dim">loading…</div>
        ) : message !== undefined ? (
          <MessageBody
            message={message}
            results={results}
            meta={(entry["claudeCode"] as Entry | undefined)?.["isMeta"] === true}
          />
        ) : typeof entry["summary"] === "string" ? (
          <div class="summary-block">
            <div class="tag">{node.type === "compaction" ? "compaction summary" : "branch summary"}</div>
            <Markdown text={entry["summary"]} />
          </div>
        ) : node.type === "custom" || node.type === "custom_message" ? (
          <CustomEntryBody entry={entry} />
        ) : null}
        <button class="link" onClick={() => setRaw(!raw)}>
          {raw ? "hide" : "show"} the entry as stored
        </button>
        {raw && entry !== null ? <pre class="raw">{JSON.stringify(entry, null, 2)}</pre> : null}
      </div>
    </div>
  );
}
