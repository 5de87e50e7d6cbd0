import { useEffect, useMemo, useState } from "preact/hooks";
import type { ContextResult } from "../../typescript/src/generated/protocol.ts";
import type { Rpc } from "./rpc.ts";
import { MessageBody } from "./messages.tsx";
import { errorText, toast } from "./toast.tsx";
import { estimateTokens, tokens } from "./format.ts";

type Message = Record<string, unknown>;

/** What the model sees now: the projected messages, tool calls with their results, summaries marked. */
export function ContextView({ rpc, sessionId, version }: { rpc: Rpc; sessionId: string; version: number }) {
  const [context, setContext] = useState<ContextResult | null>(null);

  useEffect(() => {
    let live = true;
    const timer = setTimeout(() => {
      rpc.request("context/get", { sessionId }).then(
        (result) => live && setContext(result),
        (err: unknown) => toast(errorText(err), "error"),
      );
    }, context === null ? 0 : 150); // live updates arrive in bursts: one reload per burst
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

  if (context === null) return <div class="empty">Loading the context…</div>;
  const model = context.model as { provider?: string; modelId?: string } | null;
  return (
    <div class="context-view">
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
      <ol class="context-messages">
        {context.messages.map(({ entryId, message }, i) => {
          const m = message as Message;
          const role = String(m["role"] ?? "?");
          if (role === "toolResult" && paired.has(String(m["toolCallId"]))) return null;
          const summary = role === "compactionSummary" || role === "branchSummary";
          return (
            <li key={`${entryId}-${i}`} class={`ctx-msg role-${role}${summary ? " summary" : ""}`} data-entry={entryId}>
              <div class="ctx-head">
                <span class={`role role-${role}`}>{summary ? `${role} (summary)` : role}</span>
                <span class="dim">≈ {tokens(estimates[i] ?? 0)} tokens</span>
                <code class="dim">{entryId}</code>
              </div>
              <MessageBody message={m} results={results} />
            </li>
          );
        })}
      </ol>
    </div>
  );
}
