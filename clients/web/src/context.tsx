import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ContextResult } from "../../typescript/src/generated/protocol.ts";
import type { Rpc } from "./rpc.ts";
import { MessageBody } from "./messages.tsx";
import { errorText, toast } from "./toast.tsx";
import { estimateTokens, tokens } from "./format.ts";

type Message = Record<string, unknown>;

/** Messages drawn at first (the newest), and how many more each step back draws. */
const WINDOW = 40;
/** Within this many pixels of the bottom the reader is "at the bottom": the view follows. */
const BOTTOM = 48;

/**
 * What the model sees now, to be read: the projected messages (Markdown, tool cards with their
 * results, summaries marked). Only the newest messages are drawn at first; scrolling to the top
 * draws earlier ones. While the reader is at the bottom a live session keeps it there, and
 * messages that arrive are highlighted.
 */
export function ContextView({
  rpc,
  sessionId,
  version,
  focus: wanted,
  positionOf,
}: {
  rpc: Rpc;
  sessionId: string;
  version: number;
  /** An entry to scroll to and highlight (a deep link, a search hit). */
  focus?: string | null;
  /** An entry's position in file order (-1: unknown): finds the message an entry ended up in. */
  positionOf?: (entryId: string) => number;
}) {
  const [context, setContext] = useState<ContextResult | null>(null);
  const [start, setStart] = useState<number | null>(null);
  const box = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const seen = useRef<Set<string> | null>(null);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const keep = useRef<{ height: number; top: number } | null>(null);
  const focused = useRef<string | null>(null);

  useEffect(() => {
    let live = true;
    const timer = setTimeout(
      () => {
        rpc.request("context/get", { sessionId }).then(
          (result) => {
            if (!live) return;
            const ids = new Set(result.messages.map((m) => m.entryId));
            if (seen.current !== null) {
              const added = new Set([...ids].filter((id) => !seen.current!.has(id)));
              if (added.size) setFresh(added);
            }
            seen.current = ids;
            // the window starts where it started: messages that arrive are added below it, so
            // what the reader looks at does not move (a compaction that shortens the context
            // resets it)
            const count = result.messages.length;
            setStart((prev) => (prev === null || prev >= count ? Math.max(0, count - WINDOW) : prev));
            setContext(result);
          },
          (err: unknown) => toast(errorText(err), "error"),
        );
      },
      context === null ? 0 : 150,
    ); // live updates arrive in bursts: one reload per burst
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [rpc, sessionId, version]);

  const { results, paired, estimates, total } = useMemo(() => {
    const results = new Map<string, Message>();
    const calls = new Set<string>();
    const estimates: number[] = [];
    let total = 0;
    for (const { message } of context?.messages ?? []) {
      const m = message as Message;
      if (m["role"] === "toolResult" && typeof m["toolCallId"] === "string") results.set(m["toolCallId"], m);
      if (m["role"] === "assistant" && Array.isArray(m["content"])) {
        for (const b of m["content"] as Message[]) if (b["type"] === "toolCall") calls.add(String(b["id"]));
      }
      const estimate = estimateTokens(m);
      estimates.push(estimate);
      total += estimate;
    }
    // a result shows under its call; one whose call is not in the context shows by itself
    const paired = new Set([...results.keys()].filter((id) => calls.has(id)));
    return { results, paired, estimates, total };
  }, [context]);

  const count = context?.messages.length ?? 0;
  // the message holding the entry: itself, else the first one after it in file order (a
  // streamed piece merged into its message, a bookkeeping entry, a tool result paired away)
  const focusAt = useMemo(() => {
    if (!wanted || context === null) return -1;
    const exact = context.messages.findIndex((m) => m.entryId === wanted);
    if (exact >= 0 || positionOf === undefined) return exact;
    const at = positionOf(wanted);
    if (at < 0) return -1;
    return context.messages.findIndex((m) => positionOf(m.entryId) >= at);
  }, [context, wanted]);
  const focus = focusAt >= 0 ? context!.messages[focusAt]!.entryId : null;
  // the window: the newest WINDOW messages, extended back to a focused entry
  const from = Math.max(0, Math.min(start ?? count - WINDOW, focusAt >= 0 ? focusAt - 5 : count));

  useLayoutEffect(() => {
    const el = box.current;
    if (el === null || context === null) return;
    if (keep.current !== null) {
      // earlier messages were drawn above: keep what the reader looks at in place
      el.scrollTop = keep.current.top + (el.scrollHeight - keep.current.height);
      keep.current = null;
    } else if (focusAt >= 0 && focus && focused.current !== focus) {
      // once per focus: afterwards the reader scrolls (and follows) freely
      focused.current = focus;
      atBottom.current = false;
      el.querySelector(`[data-entry="${CSS.escape(focus)}"]`)?.scrollIntoView({ block: "center" });
    } else if (atBottom.current) {
      el.scrollTop = el.scrollHeight;
    }
  }, [context, from, focus]);

  useEffect(() => {
    if (fresh.size === 0) return;
    const timer = setTimeout(() => setFresh(new Set()), 4000);
    return () => clearTimeout(timer);
  }, [fresh]);

  const earlier = () => {
    const el = box.current;
    if (el !== null) keep.current = { height: el.scrollHeight, top: el.scrollTop };
    setStart(Math.max(0, from - WINDOW));
  };

  if (context === null) return <div class="empty">Loading the context…</div>;
  const model = context.model as { provider?: string; modelId?: string } | null;
  return (
    <div
      class="context-view reader"
      ref={box}
      data-following={atBottom.current ? "true" : "false"}
      onScroll={(e) => {
        const el = e.currentTarget;
        atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < BOTTOM;
        el.dataset["following"] = String(atBottom.current);
        if (el.scrollTop < 200 && from > 0 && keep.current === null) earlier();
      }}
    >
      <div class="context-head">
        <span data-testid="context-count">{context.messages.length} messages</span>
        <span>≈ {tokens(total)} tokens (Pi's estimate: characters / 4)</span>
        {model ? (
          <span>
            model {model.provider}/{model.modelId}
          </span>
        ) : null}
        {context.thinkingLevel ? <span>thinking {context.thinkingLevel}</span> : null}
      </div>
      {from > 0 ? (
        <button class="link earlier" onClick={earlier}>
          ↑ {from} earlier message{from === 1 ? "" : "s"}
        </button>
      ) : null}
      <ol class="context-messages">
        {context.messages.slice(from).map(({ entryId, message }, k) => {
          const i = from + k;
          const m = message as Message;
          const role = String(m["role"] ?? "?");
          if (role === "toolResult" && paired.has(String(m["toolCallId"]))) return null;
          const summary = role === "compactionSummary" || role === "branchSummary";
          const classes = ["ctx-msg", `role-${role}`, summary ? "summary" : "", fresh.has(entryId) ? "fresh" : "", entryId === focus ? "focused" : ""];
          return (
            <li key={`${entryId}-${i}`} class={classes.join(" ")} data-entry={entryId}>
              <div class="ctx-head">
                <span class={`role role-${role}`}>{summary ? `${role} (summary)` : role}</span>
                <span class="dim">≈ {tokens(estimates[i] ?? 0)} tokens</span>
                <a class="dim permalink" href={`#session=${encodeURIComponent(sessionId)}&entry=${encodeURIComponent(entryId)}`}>
                  {entryId.slice(0, 8)}
                </a>
              </div>
              <MessageBody message={m} results={results} />
            </li>
          );
        })}
      </ol>
    </div>
  );
}
