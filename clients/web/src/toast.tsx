import { useEffect, useState } from "preact/hooks";

interface Toast {
  id: number;
  text: string;
  kind: "info" | "error";
}

let counter = 0;
const listeners = new Set<(toasts: Toast[]) => void>();
let current: Toast[] = [];

function publish(): void {
  for (const listener of listeners) listener(current);
}

/** A message in the corner: errors stay until dismissed, the rest fade after 5 s. */
export function toast(text: string, kind: "info" | "error" = "info"): void {
  const item = { id: ++counter, text, kind };
  current = [...current, item].slice(-5);
  publish();
  if (kind === "info") {
    setTimeout(() => {
      current = current.filter((t) => t.id !== item.id);
      publish();
    }, 5000);
  }
}

export function Toasts() {
  const [toasts, setToasts] = useState<Toast[]>(current);
  useEffect(() => {
    listeners.add(setToasts);
    return () => void listeners.delete(setToasts);
  }, []);
  return (
    <div class="toasts">
      {toasts.map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`} role={t.kind === "error" ? "alert" : "status"}>
          <span>{t.text}</span>
          <button
            aria-label="dismiss"
            onClick={() => {
              current = current.filter((x) => x.id !== t.id);
              publish();
            }}
          >
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

export function errorText(err: unknown): string {
  if (typeof err === "object" && err !== null && "describe" in err && typeof err.describe === "function") {
    return String(err.describe());
  }
  return err instanceof Error ? err.message : String(err);
}
