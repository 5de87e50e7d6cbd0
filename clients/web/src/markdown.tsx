// Markdown and highlighted code in the page. The renderer (marked, DOMPurify, highlight.js:
// richtext.ts) is a chunk loaded after the first paint; until it is here, text shows as plain
// text and code unhighlighted, then every mounted view draws again.

import { useEffect, useState } from "preact/hooks";
import { escapeHtml } from "./lang.ts";

type Rich = typeof import("./richtext.ts");

let rich: Rich | null = null;
let loading: Promise<Rich> | null = null;
const waiting = new Set<() => void>();

/** Starts loading the renderer (once); resolves when it is here. */
export function loadRich(): Promise<Rich> {
  if (loading === null) {
    loading = import("./richtext.ts").then((m) => {
      rich = m;
      for (const wake of waiting) wake();
      waiting.clear();
      return m;
    });
  }
  return loading;
}

/** The renderer if loaded; a component calling this draws again once it is. */
export function useRich(): Rich | null {
  const [, setLoaded] = useState(rich !== null);
  useEffect(() => {
    if (rich !== null) return;
    const wake = () => setLoaded(true);
    waiting.add(wake);
    void loadRich();
    return () => waiting.delete(wake);
  }, []);
  return rich;
}

/** Highlighted HTML for code (escaped plain text until the highlighter is loaded). */
export function highlight(code: string, language: string): string {
  return rich !== null ? rich.highlight(code, language) : escapeHtml(code);
}

/** Texts longer than this are shown as plain text: rendering megabytes helps nobody. */
export const MARKDOWN_MAX = 200_000;

/** A Markdown text as sanitised HTML in a div (plain text while the renderer loads, or when huge). */
export function Markdown({ text, class: cls = "" }: { text: string; class?: string }) {
  const r = useRich();
  if (r === null || text.length > MARKDOWN_MAX) return <div class={`md plain ${cls}`}>{text}</div>;
  return <div class={`md ${cls}`} dangerouslySetInnerHTML={{ __html: r.renderMarkdown(text) }} />;
}
