// The editor side of tests/acp's end-to-end tests: the ACP TypeScript SDK's client app
// (@agentclientprotocol/sdk, installed by scripts/setup-acp into .cache/acp), spawning
// `sessiond acp -- AGENT` as its agent. Reads a JSON job on argv[2]:
//   {"argv": [...], "cwd": "...", "mode": "run" | "load", "prompts": [...], "sessionId": "...",
//    "cancelOn": "agent_message_chunk", "rewinds": [{"prompt": 0, "dryRun": true}, ...]}
// and prints one JSON document: the initialize answer, the session id, every session/update
// the editor received (in order), the permission requests it was asked, each prompt's answer and
// each `_sessiond/rewind` answer (asked after the prompts). With `cancelOn` the editor sends
// `session/cancel` once, when the first prompt's turn brings an update of that kind.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import { Readable, Writable } from "node:stream";

const job = JSON.parse(process.argv[2]);
const child = spawn(job.argv[0], job.argv.slice(1), { stdio: ["pipe", "pipe", "inherit"], cwd: job.cwd });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const out = { updates: [], permissions: [], answers: [], writes: [] };
let conn = null;
let cancelled = false;
const debug = process.env.ACP_EDITOR_DEBUG ? (...a) => console.error("editor:", ...a) : () => {};

const app = acp
  .client({ name: "sessiond-acp-test-editor" })
  .onNotification(acp.methods.client.session.update, (ctx) => {
    debug("update", JSON.stringify(ctx.params).slice(0, 300));
    out.updates.push(ctx.params);
    if (job.cancelOn && !cancelled && conn && ctx.params.update.sessionUpdate === job.cancelOn) {
      cancelled = true;
      conn.notify(acp.methods.agent.session.cancel, { sessionId: ctx.params.sessionId });
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
    out.permissions.push(ctx.params);
    const allow = ctx.params.options.find((o) => o.kind.startsWith("allow")) ?? ctx.params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async (ctx) => ({
    content: await fs.readFile(ctx.params.path, "utf8"),
  }))
  .onRequest(acp.methods.client.fs.writeTextFile, async (ctx) => {
    out.writes.push(ctx.params.path);
    await fs.writeFile(ctx.params.path, ctx.params.content);
    return {};
  });

await app.connectWith(stream, async (ctx) => {
  conn = ctx;
  out.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  debug("initialized", JSON.stringify(out.initialize).slice(0, 300));
  if (job.mode === "load") {
    out.sessionId = job.sessionId;
    out.load = await ctx.request(acp.methods.agent.session.load, {
      sessionId: job.sessionId,
      cwd: job.cwd,
      mcpServers: [],
    });
  } else if (job.mode === "list") {
    out.list = await ctx.request(acp.methods.agent.session.list, { cwd: job.cwd });
  } else {
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: job.cwd, mcpServers: [] });
    out.sessionId = session.sessionId;
  }
  debug("session", out.sessionId);
  for (const text of job.prompts ?? []) {
    out.answers.push(
      await ctx.request(acp.methods.agent.session.prompt, {
        sessionId: out.sessionId,
        prompt: [{ type: "text", text }],
      }),
    );
  }
  out.rewinds = [];
  for (const params of job.rewinds ?? []) {
    out.rewinds.push(await ctx.request("_sessiond/rewind", { sessionId: out.sessionId, ...params }));
  }
});
debug("answers", JSON.stringify(out.answers));
child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", (c, s) => resolve(c ?? s)));
out.exitCode = code;
process.stdout.write(JSON.stringify(out) + "\n");
