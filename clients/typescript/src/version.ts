/** The version of @sessiond/client (sent as `clientInfo.version` by default). */
export const CLIENT_VERSION = "0.1.0";
