// Rendering Pi messages: text, thinking, tool calls (paired with their results), images,
// summaries. Text is shown as text (never as HTML).

import { useState } from "preact/hooks";

type Block = Record<string, unknown>;
type Message = Record<string, unknown>;

function Collapsible({ title, children, open = false }: { title: string; children: unknown; open?: boolean }) {
  const [shown, setShown] = useState(open);
  return (
    <div class="collapsible">
      <button class="link" onClick={() => setShown(!shown)}>
        {shown ? "▾" : "▸"} {title}
      </button>
      {shown ? children : null}
    </div>
  );
}

function clip(text: string, limit = 4000): string {
  return text.length > limit ? `${text.slice(0, limit)}\n… (${text.length - limit} more characters)` : text;
}

export function BlockView({ block, result }: { block: Block; result?: Message | undefined }) {
  const type = block["type"];
  if (type === "text") return <pre class="text">{clip(String(block["text"] ?? ""))}</pre>;
  if (type === "thinking")
    return (
      <Collapsible title="thinking">
        <pre class="thinking">{clip(String(block["thinking"] ?? ""))}</pre>
      </Collapsible>
    );
  if (type === "image") return <div class="dim">[image {String(block["mimeType"] ?? "")}]</div>;
  if (type === "toolCall") {
    return (
      <div class="tool-call" data-tool-call={String(block["id"] ?? "")}>
        <div class="tool-head">
          <span class="tag">tool call</span> <strong>{String(block["name"] ?? "?")}</strong>
          {result === undefined ? <span class="dim"> · no result in this context</span> : null}
          {result?.["isError"] === true ? <span class="error-tag">error</span> : null}
        </div>
        <pre class="args">{clip(JSON.stringify(block["arguments"] ?? {}, null, 2), 1500)}</pre>
        {result !== undefined ? (
          <Collapsible title={`result (${String(result["toolName"] ?? "")})`}>
            <ContentView content={result["content"]} />
          </Collapsible>
        ) : null}
      </div>
    );
  }
  return <pre class="dim">{JSON.stringify(block)}</pre>;
}

export function ContentView({ content, results }: { content: unknown; results?: Map<string, Message> }) {
  if (typeof content === "string") return <pre class="text">{clip(content)}</pre>;
  if (!Array.isArray(content)) return null;
  return (
    <div>
      {(content as Block[]).map((block, i) => (
        <BlockView
          key={i}
          block={block}
          result={block["type"] === "toolCall" ? results?.get(String(block["id"])) : undefined}
        />
      ))}
    </div>
  );
}

/** A message by itself (the entry panel): its role's particular fields, then its content. */
export function MessageBody({ message, results }: { message: Message; results?: Map<string, Message> }) {
  const role = message["role"];
  if (role === "compactionSummary" || role === "branchSummary") {
    return (
      <div class="summary-block">
        <div class="tag">{role === "compactionSummary" ? "compaction summary" : "branch summary"}</div>
        <pre>{clip(String(message["summary"] ?? ""))}</pre>
      </div>
    );
  }
  if (role === "bashExecution") {
    return (
      <div>
        <pre class="text">$ {String(message["command"] ?? "")}</pre>
        <pre class="dim">{clip(String(message["output"] ?? ""))}</pre>
      </div>
    );
  }
  return (
    <div>
      {role === "assistant" && typeof message["model"] === "string" ? (
        <div class="dim">
          {String(message["provider"] ?? "")}/{message["model"]}
          {message["stopReason"] ? ` · ${String(message["stopReason"])}` : ""}
        </div>
      ) : null}
      {role === "toolResult" ? (
        <div class="dim">
          result of {String(message["toolName"] ?? "?")} ({String(message["toolCallId"] ?? "")})
          {message["isError"] === true ? " · error" : ""}
        </div>
      ) : null}
      <ContentView content={message["content"]} {...(results ? { results } : {})} />
      {typeof message["errorMessage"] === "string" ? <div class="error-tag">{message["errorMessage"]}</div> : null}
    </div>
  );
}
