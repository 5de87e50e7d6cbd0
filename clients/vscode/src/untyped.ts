// Methods this extension uses before every daemon has them (`search/query`, `stats/query`,
// round 3's contracts): called by name, and a daemon without them is told apart from a failure.

import { SessiondError, type SessiondClient } from "@sessiond/client";

/** JSON-RPC's "method not found". */
export const METHOD_NOT_FOUND = -32601;

export class MissingMethodError extends Error {
  constructor(readonly method: string) {
    super(`this sessiond has no ${method} (it is older than this extension): update sessiond`);
  }
}

/** Calls `method` by name; a daemon that does not know it throws MissingMethodError. */
export async function call<T>(client: SessiondClient, method: string, params: Record<string, unknown>): Promise<T> {
  const request = client.request as unknown as (m: string, p: Record<string, unknown>) => Promise<T>;
  try {
    return await request.call(client, method, params);
  } catch (err) {
    if (err instanceof SessiondError && err.code === METHOD_NOT_FOUND) throw new MissingMethodError(method);
    throw err;
  }
}
