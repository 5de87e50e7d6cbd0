// Light or dark: the system's choice (prefers-color-scheme) unless the reader picked one with
// the toggle; the pick is remembered in this browser.

export type Theme = "auto" | "light" | "dark";
const KEY = "sessiond-theme";

export function currentTheme(): Theme {
  const t = localStorage.getItem(KEY);
  return t === "light" || t === "dark" ? t : "auto";
}

export function applyTheme(theme: Theme): void {
  if (theme === "auto") {
    delete document.documentElement.dataset["theme"];
    localStorage.removeItem(KEY);
  } else {
    document.documentElement.dataset["theme"] = theme;
    localStorage.setItem(KEY, theme);
  }
}

/** auto → the other of what the system shows → its opposite → auto. */
export function nextTheme(theme: Theme): Theme {
  const systemDark = matchMedia("(prefers-color-scheme: dark)").matches;
  if (theme === "auto") return systemDark ? "light" : "dark";
  if (theme === (systemDark ? "light" : "dark")) return systemDark ? "dark" : "light";
  return "auto";
}
