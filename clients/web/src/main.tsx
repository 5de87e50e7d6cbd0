import { render } from "preact";
import { App, NoToken } from "./app.tsx";
import { Rpc, socketUrl, takeToken } from "./rpc.ts";
import "./style.css";
import { applyTheme, currentTheme } from "./theme.ts";

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
