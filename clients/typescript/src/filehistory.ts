// The file-history payloads the schema types as open objects (`Open`), spelled out from
// docs/file-history.md. Fields may be added by the daemon: check before relying on others.

/** A file's state in a snapshot. */
export type FileState =
  | { kind: "file"; blob: string; mode: number; size: number }
  | { kind: "symlink"; target: string }
  | { kind: "missing" };

/** One element of `fileHistory/list`'s `checkpoints`. */
export interface FileCheckpoint {
  messageId: string;
  kind: "checkpoint" | "update" | "undo";
  /** The prompt's text. */
  prompt: string | null;
  timestamp: string | null;
  /** Files in the snapshot. */
  files: number;
  /** Files that differ from the previous snapshot. */
  changed: number;
  [key: string]: unknown;
}

/** One element of `fileHistory/rewind`'s `files`. */
export interface RewindFile {
  path: string;
  /** What the file needs. */
  action: "none" | "write" | "delete" | "symlink";
  /** ok / forced: done (or to be done, in a dry run); conflict / refused / failed: left alone. */
  status: "ok" | "forced" | "conflict" | "refused" | "failed";
  reason?: string;
  from?: FileState;
  to: FileState;
  [key: string]: unknown;
}

/** One element of `fileHistory/diff`'s `files`. */
export interface FileDiff {
  path: string;
  /** null: the file cannot be read now (`error` says why), so whether it changed is unknown. */
  changed: boolean | null;
  binary: boolean;
  tooLarge: boolean;
  added: number;
  removed: number;
  /** Unified diff; null when binary, too large or failed. */
  diff: string | null;
  oldSize: number;
  newSize: number | null;
  from: FileState;
  to: FileState | null;
  error?: string | null;
  [key: string]: unknown;
}
