// The reader's heavy half, loaded after the first paint (a chunk of its own): `marked` turns
// Markdown into HTML (code blocks highlighted by highlight.js), DOMPurify removes everything
// that could run or load (scripts, event handlers, javascript: links, styles, remote images).
// Transcripts are written by models and by whatever a tool printed: they are never trusted.

import { Marked } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { EXTENSIONS, escapeHtml } from "./lang.ts";

hljs.registerLanguage("bash", bash);
hljs.registerLanguage("diff", diff);
hljs.registerLanguage("go", go);
hljs.registerLanguage("javascript", javascript);
hljs.registerLanguage("json", json);
hljs.registerLanguage("python", python);
hljs.registerLanguage("rust", rust);
hljs.registerLanguage("xml", xml);
hljs.registerLanguage("yaml", yaml);

const LIMIT = 100_000;

/** Highlighted HTML for `code` (escaped text when the language is unknown or the code is huge). */
export function highlight(code: string, language: string): string {
  const lang = EXTENSIONS[language.toLowerCase()] ?? language.toLowerCase();
  if (code.length > LIMIT || !lang || hljs.getLanguage(lang) === undefined) return escapeHtml(code);
  try {
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  } catch {
    return escapeHtml(code);
  }
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    // HTML written in a transcript is shown as the text it is: models and tools write tags
    // when they talk about code, and nothing in a transcript is trusted to be markup.
    html({ text }) {
      return escapeHtml(text);
    },
    code({ text, lang }) {
      const language = (lang ?? "").trim().split(/\s+/)[0] ?? "";
      return `<pre class="code"><code class="hljs">${highlight(text, language)}</code></pre>`;
    },
  },
});

let hooked = false;
function purifier(): typeof DOMPurify {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A") {
        const href = node.getAttribute("href") ?? "";
        if (!/^(https?:|mailto:|#)/i.test(href)) node.removeAttribute("href");
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
      if (node.tagName === "IMG") {
        // the page may load nothing from elsewhere (CSP): only inline images stay
        const src = node.getAttribute("src") ?? "";
        if (!/^data:image\/(png|jpeg|gif|webp);/i.test(src)) node.removeAttribute("src");
      }
    });
  }
  return DOMPurify;
}

const cache = new Map<string, string>();
const CACHE_MAX = 500;

/** Sanitised HTML for a Markdown text (memoised: the same messages are drawn again and again). */
export function renderMarkdown(text: string): string {
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  const raw = marked.parse(text) as string;
  const html = purifier().sanitize(raw, {
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "svg", "math"],
    FORBID_ATTR: ["style", "id"],
    ALLOW_DATA_ATTR: false,
    ADD_ATTR: ["target"],
  });
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
  cache.set(text, html);
  return html;
}

