// File names to highlight.js language names, and HTML escaping: small, loaded with the page
// (the highlighter itself comes later, with the rest of the reader: see markdown.tsx).

export const EXTENSIONS: Record<string, string> = {
  sh: "bash", bash: "bash", zsh: "bash", diff: "diff", patch: "diff", go: "go",
  js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript", json: "json", jsonl: "json",
  py: "python", pyi: "python", rs: "rust", ts: "javascript", tsx: "javascript", mts: "javascript",
  typescript: "javascript", html: "xml", xml: "xml", svg: "xml", vue: "xml", yml: "yaml", yaml: "yaml", toml: "yaml",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The language of a file by its name ("" when unknown). */
export function languageOf(path: string): string {
  const ext = path.split(".").pop()?.toLowerCase() ?? "";
  return EXTENSIONS[ext] ?? "";
}

