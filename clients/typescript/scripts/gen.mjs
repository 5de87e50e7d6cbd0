#!/usr/bin/env node
// Generates src/generated/protocol.ts from protocol/sessiond.schema.json.
//
//   node scripts/gen.mjs            write src/generated/protocol.ts   (npm run gen)
//   node scripts/gen.mjs --check    exit 1 if the committed file is stale (npm run check-gen)
//   --schema PATH / --out PATH      other locations (tests use them)
//
// The schema's `$defs` become TypeScript types with json-schema-to-typescript; its
// `x-sessiond` object (methods, notifications, server requests, error codes) becomes the maps
// the client is typed with (`Methods`, `Notifications`, `ServerRequests`, `ErrorCodes`,
// `METHODS`) and one typed wrapper per method (`MethodGroups`, `bindMethods`). The output only
// depends on the schema and the pinned versions in package-lock.json, so `--check` is exact.

import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { compile } from "json-schema-to-typescript";
import * as prettier from "prettier";

const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values: opts } = parseArgs({
  options: {
    check: { type: "boolean", default: false },
    schema: { type: "string", default: resolve(PACKAGE, "../../protocol/sessiond.schema.json") },
    out: { type: "string", default: resolve(PACKAGE, "src/generated/protocol.ts") },
  },
});

const ROOT = "SessiondProtocolDefinitions";
const PRETTIER = { parser: "typescript", printWidth: 110, trailingComma: "all" };

/** `{$ref, description}` -> `{allOf: [{$ref}], description}`: keeps the doc comment without
 * json-schema-to-typescript minting a copy of the referenced type (`Open1`, `Open2`, ...). */
function refsWithSiblings(node) {
  if (Array.isArray(node)) return node.map(refsWithSiblings);
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) out[k] = refsWithSiblings(v);
  if (typeof out.$ref === "string" && Object.keys(out).length > 1) {
    const { $ref, ...rest } = out;
    return { ...rest, allOf: [{ $ref }] };
  }
  return out;
}

function jsdoc(text, indent = "") {
  const lines = String(text).trim().split("\n");
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

function refName(ref) {
  if (ref === null || ref === undefined) return "null";
  const m = /^#\/\$defs\/(.+)$/.exec(ref.$ref ?? "");
  if (!m) throw new Error(`unsupported reference in x-sessiond: ${JSON.stringify(ref)}`);
  return m[1];
}

/** A method's group and the wrapper's name: `session/new` -> ["session", "new"]. */
function split(method) {
  const i = method.indexOf("/");
  return i < 0 ? [null, method] : [method.slice(0, i), method.slice(i + 1)];
}

function extras(x, defs) {
  const out = [];
  const methods = Object.entries(x.methods);
  const emptyParams = (name) =>
    defs[name] !== undefined && Object.keys(defs[name].properties ?? {}).length === 0;
  // every field optional (or none at all): the wrapper's params may be left out
  const optionalParams = (name) => defs[name] !== undefined && (defs[name].required ?? []).length === 0;

  out.push(`/** The protocol version this file was generated for (\`initialize.protocolVersion\`). */`);
  out.push(`export const PROTOCOL_VERSION = ${JSON.stringify(x.protocolVersion)} as const;\n`);

  // Methods
  out.push(`/** Every method: its params and result types. */`);
  out.push(`export interface Methods {`);
  for (const [name, m] of methods) {
    out.push(jsdoc(m.summary, "  ").trimEnd());
    out.push(`  ${JSON.stringify(name)}: { params: ${refName(m.params)}; result: ${refName(m.result)} };`);
  }
  out.push(`}\n`);
  out.push(`export type MethodName = keyof Methods;`);
  out.push(`export type MethodParams<M extends MethodName> = Methods[M]["params"];`);
  out.push(`export type MethodResult<M extends MethodName> = Methods[M]["result"];\n`);
  out.push(`/** What the schema says about each method besides its types. */`);
  out.push(`export interface MethodInfo {`);
  out.push(`  /** Accepts a \`workDoneToken\` and then reports \`$/progress\`. */`);
  out.push(`  readonly longRunning: boolean;`);
  out.push(`  /** The error codes specific to the method (any request can also get the general ones). */`);
  out.push(`  readonly errors: readonly number[];`);
  out.push(`  readonly summary: string;`);
  out.push(`  /** The method takes no params (\`{}\` or none). */`);
  out.push(`  readonly noParams: boolean;`);
  out.push(`}\n`);
  out.push(`export const METHODS: { readonly [M in MethodName]: MethodInfo } = {`);
  for (const [name, m] of methods) {
    const info = {
      longRunning: m.longRunning,
      errors: m.errors,
      summary: m.summary,
      noParams: emptyParams(refName(m.params)),
    };
    out.push(`  ${JSON.stringify(name)}: ${JSON.stringify(info)},`);
  }
  out.push(`};\n`);

  // Notifications and server requests
  out.push(`/** Notifications the server sends: method -> params. */`);
  out.push(`export interface Notifications {`);
  for (const [name, ref] of Object.entries(x.notifications)) out.push(`  ${JSON.stringify(name)}: ${refName(ref)};`);
  out.push(`}\n`);
  out.push(`export type NotificationName = keyof Notifications;\n`);
  out.push(`/** Requests the server sends to a client: method -> params and result. */`);
  out.push(`export interface ServerRequests {`);
  for (const [name, r] of Object.entries(x.serverRequests)) {
    out.push(`  ${JSON.stringify(name)}: { params: ${refName(r.params)}; result: ${refName(r.result)} };`);
  }
  out.push(`}\n`);
  out.push(`export type ServerRequestName = keyof ServerRequests;\n`);

  // Discriminated unions by name
  out.push(`/** One \`session/update\` payload: a union discriminated by \`sessionUpdate\`. */`);
  out.push(`export type SessionUpdateKind = SessionUpdate["update"];`);
  out.push(`/** The \`sessionUpdate\` discriminators (\`"entries_appended"\`, \`"usage_update"\`, ...). */`);
  out.push(`export type SessionUpdateName = SessionUpdateKind["sessionUpdate"];`);
  out.push(`/** The update of one kind: \`UpdateOf<"usage_update">\` is \`UsageUpdate\`. */`);
  out.push(`export type UpdateOf<K extends SessionUpdateName> = Extract<SessionUpdateKind, { sessionUpdate: K }>;`);
  out.push(`/** One entry of \`session/append\`: a union discriminated by \`type\`. */`);
  out.push(`export type EntrySpec = AppendParams["entries"][number];\n`);

  // Error codes
  const errors = Object.entries(x.errors).map(([code, e]) => [Number(code), e]);
  out.push(`/** Every error code by name. */`);
  out.push(`export const ErrorCodes = {`);
  for (const [code, e] of errors) {
    out.push(jsdoc(e.description, "  ").trimEnd());
    out.push(`  ${e.name}: ${code},`);
  }
  out.push(`} as const;\n`);
  out.push(`export type ErrorCodeName = keyof typeof ErrorCodes;\n`);
  out.push(`/** Name and description of every error code. */`);
  out.push(`export const ERRORS: { readonly [code: number]: { readonly name: ErrorCodeName; readonly description: string } } = {`);
  for (const [code, e] of errors) out.push(`  [${code}]: ${JSON.stringify({ name: e.name, description: e.description })},`);
  out.push(`};\n`);

  // One typed wrapper per method, in groups
  const groups = new Map();
  for (const [name, m] of methods) {
    const [group, verb] = split(name);
    if (group === null) continue; // initialize / shutdown: lifecycle, on the client itself
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push([name, verb, m]);
  }
  const typeName = (group) => `${group[0].toUpperCase()}${group.slice(1)}Methods`;
  out.push(`/** The signature every wrapper calls: the client's typed \`request\`. */`);
  out.push(`export type MethodCaller<O> = <M extends MethodName>(method: M, params: MethodParams<M>, options?: O) => Promise<MethodResult<M>>;\n`);
  for (const [group, entries] of groups) {
    out.push(`/** \`${group}/*\` methods. */`);
    out.push(`export interface ${typeName(group)}<O> {`);
    for (const [name, verb, m] of entries) {
      const params = refName(m.params);
      const optional = optionalParams(params) ? "?" : "";
      out.push(jsdoc(`\`${name}\`: ${m.summary}${m.longRunning ? "\n\nLong-running: pass `onProgress` (or a `workDoneToken`) for `$/progress`." : ""}`, "  ").trimEnd());
      out.push(`  ${JSON.stringify(verb)}(params${optional}: ${params}, options?: O): Promise<${refName(m.result)}>;`);
    }
    out.push(`}\n`);
  }
  out.push(`/** Every method but the lifecycle ones, as \`client.<group>.<verb>(params, options)\`. */`);
  out.push(`export interface MethodGroups<O> {`);
  for (const group of groups.keys()) out.push(`  readonly ${JSON.stringify(group)}: ${typeName(group)}<O>;`);
  out.push(`}\n`);
  out.push(`/** Builds the method groups on top of a typed \`request\`. */`);
  out.push(`export function bindMethods<O>(call: MethodCaller<O>): MethodGroups<O> {`);
  out.push(`  return {`);
  for (const [group, entries] of groups) {
    out.push(`    ${JSON.stringify(group)}: {`);
    for (const [name, verb, m] of entries) {
      const params = refName(m.params);
      const optional = optionalParams(params) ? "?" : "";
      const arg = optional ? "params ?? {}" : "params";
      out.push(`      ${JSON.stringify(verb)}: (params${optional}: ${params}, options?: O) => call(${JSON.stringify(name)}, ${arg}, options),`);
    }
    out.push(`    },`);
  }
  out.push(`  };`);
  out.push(`}`);
  return out.join("\n");
}

async function generate(schemaPath) {
  const text = readFileSync(schemaPath, "utf8");
  const schema = JSON.parse(text);
  const defs = schema.$defs;
  const x = schema["x-sessiond"];
  if (!defs || !x) throw new Error(`${schemaPath}: no $defs or x-sessiond`);
  const root = {
    title: ROOT,
    type: "object",
    additionalProperties: false,
    properties: Object.fromEntries(Object.keys(defs).map((k) => [k, { $ref: `#/$defs/${k}` }])),
    $defs: refsWithSiblings(defs),
  };
  let types = await compile(root, ROOT, {
    bannerComment: "",
    additionalProperties: false, // params without additionalProperties: no index signature (typos fail)
    ignoreMinAndMaxItems: true, // `entries: EntrySpec[]`, not a 1-tuple
    strictIndexSignatures: false,
    unreachableDefinitions: false,
    format: false,
  });
  // the synthetic root only exists to reach every definition
  const start = types.indexOf(`export interface ${ROOT} {`);
  if (start < 0) throw new Error("json-schema-to-typescript output changed: no root interface");
  const end = types.indexOf("\n}\n", start);
  types = types.slice(0, start) + types.slice(end + 3);
  const digest = createHash("sha256").update(text).digest("hex");
  const schemaRel = relative(PACKAGE, schemaPath).split("\\").join("/");
  const banner = [
    `// Generated by \`npm run gen\` (clients/typescript/scripts/gen.mjs) from ${schemaRel.replace(/^(\.\.\/)+/, "")}.`,
    `// Do not edit: change the protocol models, regenerate the schema, then run \`npm run gen\`.`,
    `// Schema sha256: ${digest}`,
    `/* eslint-disable */`,
    ``,
  ].join("\n");
  return prettier.format(`${banner}\n${types}\n${extras(x, defs)}\n`, PRETTIER);
}

const generated = await generate(resolve(opts.schema));
if (opts.check) {
  let current = "";
  try {
    current = readFileSync(opts.out, "utf8");
  } catch {
    // missing counts as stale
  }
  if (current !== generated) {
    const a = current.split("\n");
    const b = generated.split("\n");
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    process.stderr.write(
      `${relative(process.cwd(), opts.out)} is stale versus ${relative(process.cwd(), opts.schema)}: ` +
        `run \`npm run gen\` in clients/typescript.\n` +
        `first difference at line ${i + 1}:\n  committed: ${JSON.stringify(a[i] ?? "<end of file>")}\n` +
        `  expected:  ${JSON.stringify(b[i] ?? "<end of file>")}\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`${relative(process.cwd(), opts.out)} is up to date\n`);
} else {
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, generated);
  process.stdout.write(`wrote ${relative(process.cwd(), opts.out)}\n`);
}
