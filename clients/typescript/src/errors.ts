// Errors: every failed request rejects with a SessiondError.

import { ResponseError, ConnectionError } from "vscode-jsonrpc/node";
import { ERRORS, ErrorCodes, type ErrorCodeName } from "./generated/protocol.js";

/** Codes the client itself uses for failures that never reached the server (vscode-jsonrpc's). */
export const ClientErrorCodes = {
  /** The connection closed (or was disposed) before the answer came. */
  CONNECTION_CLOSED: -32097,
  /** The request could not be written: the connection is not open. */
  CONNECTION_INACTIVE: -32096,
} as const;

/** What `error.data` holds for the codes that document it (every field optional: check first). */
export interface SessiondErrorData {
  /** -32602 INVALID_PARAMS: the offending parameter. */
  field?: string;
  /** -32012 LEAF_MISMATCH: the session's current leaf. */
  currentLeafId?: string | null;
  /** -32018 STORAGE_ERROR. */
  errno?: number;
  sessionId?: string;
  entryId?: string;
  /** -32028 PATH_REFUSED. */
  path?: string;
  reason?: string;
  compactionId?: string;
  summarizer?: string;
  [key: string]: unknown;
}

/**
 * A JSON-RPC error answered by the daemon (or a connection failure, see `ClientErrorCodes`).
 *
 * `code` is one of `ErrorCodes` (e.g. `ErrorCodes.SESSION_NOT_FOUND`), `codeName` its name,
 * `data` the details the daemon always sends (`field`, `currentLeafId`, `errno`...), `method`
 * the request that failed.
 */
export class SessiondError extends Error {
  override readonly name = "SessiondError";
  readonly code: number;
  readonly data: SessiondErrorData;
  readonly method: string | undefined;

  constructor(code: number, message: string, data?: unknown, method?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.data = isRecord(data) ? (data as SessiondErrorData) : data === undefined || data === null ? {} : { value: data };
    this.method = method;
  }

  /** The name of the code (`"SESSION_NOT_FOUND"`), `"CONNECTION_CLOSED"`..., or undefined. */
  get codeName(): ErrorCodeName | keyof typeof ClientErrorCodes | undefined {
    const known = ERRORS[this.code];
    if (known !== undefined) return known.name;
    for (const [name, code] of Object.entries(ClientErrorCodes)) {
      if (code === this.code) return name as keyof typeof ClientErrorCodes;
    }
    return undefined;
  }

  /** Whether the request was cancelled (-32800). */
  get cancelled(): boolean {
    return this.code === ErrorCodes.REQUEST_CANCELLED;
  }

  /** Whether the connection went away (the request may or may not have been carried out). */
  get connectionClosed(): boolean {
    return this.code === ClientErrorCodes.CONNECTION_CLOSED || this.code === ClientErrorCodes.CONNECTION_INACTIVE;
  }

  /** `SessiondError.is(err, ErrorCodes.LEAF_MISMATCH)`: a type guard for one code (or any code). */
  static is(error: unknown, code?: number): error is SessiondError {
    return error instanceof SessiondError && (code === undefined || error.code === code);
  }

  /** Converts what vscode-jsonrpc rejected with. */
  static from(error: unknown, method?: string): SessiondError {
    if (error instanceof SessiondError) return error;
    if (error instanceof ResponseError) {
      return new SessiondError(error.code, error.message, error.data, method, { cause: error });
    }
    if (error instanceof ConnectionError) {
      return new SessiondError(ClientErrorCodes.CONNECTION_INACTIVE, error.message, undefined, method, {
        cause: error,
      });
    }
    const message = error instanceof Error ? error.message : String(error);
    return new SessiondError(ErrorCodes.INTERNAL_ERROR, message, undefined, method, { cause: error });
  }

  /** The error a server-request handler should answer with (a plain Error becomes -32603). */
  toResponseError(): ResponseError<SessiondErrorData> {
    return new ResponseError(this.code, this.message, this.data);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
