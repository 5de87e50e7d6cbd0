import { useEffect, useState } from "preact/hooks";
import type { DiffResult, RewindResult } from "../../typescript/src/generated/protocol.ts";
import type { FileCheckpoint, FileDiff, RewindFile } from "../../typescript/src/filehistory.ts";
import type { Rpc } from "./rpc.ts";
import { errorText, toast } from "./toast.tsx";
import { time } from "./format.ts";

function DiffText({ text }: { text: string }) {
  return (
    <pre class="diff">
      {text.split("\n").map((line, i) => (
        <div
          key={i}
          class={
            line.startsWith("+") && !line.startsWith("+++")
              ? "add"
              : line.startsWith("-") && !line.startsWith("---")
                ? "del"
                : line.startsWith("@@")
                  ? "hunk"
                  : ""
          }
        >
          {line || " "}
        </div>
      ))}
    </pre>
  );
}

function RewindTable({ result, title, kind }: { result: RewindResult; title: string; kind: string }) {
  const files = result.files as unknown as RewindFile[];
  return (
    <div class="rewind-result" data-kind={kind} data-dry-run={String(result.dryRun)}>
      <h4>{title}</h4>
      <div class="dim">
        {result.written} to write · {result.deleted} to delete · {result.conflicts} conflict
        {result.conflicts === 1 ? "" : "s"} · {result.refused} refused
      </div>
      <table class="files-table">
        <thead>
          <tr>
            <th>file</th>
            <th>action</th>
            <th>status</th>
            <th>why</th>
          </tr>
        </thead>
        <tbody>
          {files.map((f) => (
            <tr key={f.path} class={`status-${f.status}`} data-path={f.path} data-action={f.action} data-status={f.status}>
              <td>
                <code>{f.path}</code>
              </td>
              <td>{f.action}</td>
              <td>{f.status}</td>
              <td class="dim">{f.reason ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Checkpoints per prompt, what changed since each, rewind with a preview first, and undo. */
export function FilesView({
  rpc,
  sessionId,
  cwd,
  readOnly,
  version,
}: {
  rpc: Rpc;
  sessionId: string;
  cwd: string;
  readOnly: boolean;
  version: number;
}) {
  const [checkpoints, setCheckpoints] = useState<FileCheckpoint[] | null>(null);
  const [tracked, setTracked] = useState<string[]>([]);
  const [chosen, setChosen] = useState<string | null>(null);
  const [diff, setDiff] = useState<DiffResult | null>(null);
  const [preview, setPreview] = useState<RewindResult | null>(null);
  const [done, setDone] = useState<RewindResult | null>(null);
  const [undone, setUndone] = useState(false);
  const [force, setForce] = useState(false);
  const [working, setWorking] = useState(false);

  useEffect(() => {
    rpc.request("fileHistory/list", { sessionId }).then(
      (r) => {
        const list = r.checkpoints as unknown as FileCheckpoint[];
        setCheckpoints(list);
        setTracked(r.tracked);
        setChosen((c) => c ?? list.find((k) => k.kind !== "undo")?.messageId ?? null);
      },
      (err: unknown) => toast(errorText(err), "error"),
    );
  }, [rpc, sessionId, version]);

  useEffect(() => {
    setDiff(null);
    setPreview(null);
    if (chosen === null) return;
    rpc.request("fileHistory/diff", { sessionId, messageId: chosen }).then(setDiff, (err: unknown) =>
      toast(errorText(err), "error"),
    );
  }, [rpc, sessionId, chosen, version]);

  const run = async (work: () => Promise<void>) => {
    setWorking(true);
    try {
      await work();
    } catch (err) {
      toast(errorText(err), "error");
    } finally {
      setWorking(false);
    }
  };

  if (checkpoints === null) return <div class="empty">Loading file history…</div>;
  if (checkpoints.length === 0)
    return (
      <div class="empty">
        No file-history checkpoints in this session: an agent records them with <code>fileHistory/checkpoint</code> at
        each prompt (Claude Code's own backups show here for its sessions).
      </div>
    );
  const diffFiles = (diff?.files ?? []) as unknown as FileDiff[];
  return (
    <div class="files-view">
      <div class="checkpoints">
        <h4>Checkpoints ({tracked.length} tracked files)</h4>
        <ol>
          {checkpoints.map((c) => (
            <li
              key={c.messageId}
              class={`${c.messageId === chosen ? "selected" : ""} kind-${c.kind}`}
              data-checkpoint={c.messageId}
              onClick={() => setChosen(c.messageId)}
            >
              <div class="title">{c.kind === "undo" ? "↶ undo point" : c.prompt || c.messageId}</div>
              <div class="dim">
                {time(c.timestamp)} · {c.files} files · {c.changed} changed
              </div>
            </li>
          ))}
        </ol>
      </div>
      <div class="checkpoint-detail">
        {chosen === null ? null : (
          <>
            <div class="actions">
              <button
                data-action="preview-rewind"
                disabled={working}
                onClick={() =>
                  run(async () => {
                    setDone(null);
                    setUndone(false);
                    setPreview(await rpc.request("fileHistory/rewind", { sessionId, messageId: chosen, dryRun: true, force }));
                  })
                }
              >
                Preview rewind
              </button>
              <button
                data-action="rewind"
                disabled={working || readOnly || preview === null}
                title={readOnly ? "Read-only: another agent's session" : preview === null ? "Preview first" : undefined}
                onClick={() =>
                  run(async () => {
                    const result = await rpc.request("fileHistory/rewind", { sessionId, messageId: chosen, force });
                    setDone(result);
                    setUndone(false);
                    setPreview(null);
                    toast(`Rewound: ${result.written} written, ${result.deleted} deleted, ${result.conflicts} conflicts`);
                  })
                }
              >
                Rewind files in {cwd}
              </button>
              <label>
                <input type="checkbox" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} /> also
                overwrite conflicting files
              </label>
              {done?.undoId && !undone ? (
                <button
                  data-action="undo"
                  disabled={working || readOnly}
                  onClick={() =>
                    run(async () => {
                      const result = await rpc.request("fileHistory/rewind", { sessionId, messageId: done.undoId! });
                      setDone(result);
                      setUndone(true);
                      toast(`Undone: ${result.written} written, ${result.deleted} deleted, ${result.conflicts} conflicts`);
                    })
                  }
                >
                  Undo the rewind
                </button>
              ) : null}
            </div>
            {preview ? <RewindTable result={preview} kind="preview" title="Dry run: what a rewind would do" /> : null}
            {done ? (
              <RewindTable
                result={done}
                kind={undone ? "undo" : "rewind"}
                title={undone ? "Undone: the files are back as they were before the rewind" : "Rewound"}
              />
            ) : null}
            <h4>
              Changes since this checkpoint{" "}
              {diff ? (
                <span class="dim">
                  +{diff.added} −{diff.removed}
                </span>
              ) : null}
            </h4>
            {diff === null ? (
              <div class="dim">loading…</div>
            ) : (
              diffFiles.map((f) => (
                <details key={f.path} class="file-diff" data-path={f.path} open={diffFiles.length <= 5}>
                  <summary>
                    <code>{f.path}</code>{" "}
                    <span class="dim">
                      {String((f as Record<string, unknown>)["status"] ?? (f.changed ? "changed" : "unchanged"))} +{f.added} −
                      {f.removed}
                    </span>
                  </summary>
                  {f.diff ? (
                    <DiffText text={f.diff} />
                  ) : (
                    <div class="dim">{f.binary ? "binary file" : f.tooLarge ? "too large to show" : "no textual change"}</div>
                  )}
                </details>
              ))
            )}
          </>
        )}
      </div>
    </div>
  );
}
