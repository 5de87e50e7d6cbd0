import { render } from "preact";
import { App, NoToken } from "./app.tsx";
import { Rpc, socketUrl, takeToken } from "./rpc.ts";
import "./style.css";
import { applyTheme, currentTheme } from "./theme.ts";
import { loadRich } from "./markdown.tsx";

applyTheme(currentTheme());

const { token } = takeToken();
const root = document.getElementById("app")!;
if (token === null) {
  render(<NoToken />, root);
} else {
  const rpc = new Rpc(socketUrl(), token);
  rpc.start().catch(() => undefined); // the status bar says what went wrong
  render(<App rpc={rpc} />, root);
}

// the reader's renderer (a chunk of its own) once the first paint is done, so reading an entry
// does not wait for it
addEventListener("load", () => setTimeout(() => void loadRich(), 1500));
