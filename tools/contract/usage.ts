// A snapexec client as a TypeScript user writes one: types generated from
// api/openapi.yaml by openapi-typescript (gen/api.ts), requests made with
// openapi-fetch. `make test` type-checks this file under tsc --strict and
// never runs it; each line below is a promise the contract makes to such a
// user, and a contract that breaks one fails to compile here.
import createClient from "openapi-fetch";
import type { components, paths } from "./gen/api";

type ExecResult = components["schemas"]["ExecResult"];
type Problem = components["schemas"]["Problem"];

// /exec answers JSON, or server-sent events when asked for them. A client
// that parses JSON says so: its answers are then typed by their JSON schemas
// (problems included) and never as the event stream's text.
type JSONMedia = "application/json" | "application/problem+json";

export function snapexec(token: string) {
  return createClient<paths, JSONMedia>({
    baseUrl: "http://127.0.0.1:8080",
    headers: { Authorization: `Bearer ${token}` },
  });
}

// Runs a login-shell command with a snapshot and returns its stdout.
export async function execOutput(token: string): Promise<string> {
  const { data, error } = await snapexec(token).POST("/exec", {
    headers: { Accept: "application/json" },
    body: {
      argv: ["/bin/bash", "-lc", "git status --short"],
      // Only what the user means: fields with a documented default stay optional.
      envPolicy: { includeOnly: ["PATH", "HOME"] },
      shellSnapshot: { scopeId: "workspace-1", shell: { name: "bash", path: "/bin/bash" } },
    },
  });
  if (error) {
    return problemText(error);
  }
  // The 200 JSON is an ExecResult, not ExecResult | string.
  const result: ExecResult = data;
  const outcome: "used" | "partial" | "fallback" | "ineligible" | "not_requested" | "not_run" = result.snapshot.outcome;
  return `${outcome}: ${data.stdout ?? ""}`;
}

// Starts a background process, signals it by the name results use, and
// reads the process table.
export async function processes(token: string): Promise<(string | null)[]> {
  const client = snapexec(token);
  const started = await client.POST("/processes", { body: { argv: ["sleep", "30"] } });
  if (started.error) {
    throw new Error(problemText(started.error));
  }
  const id: string = started.data.processId;
  const sig = await client.POST("/processes/{processId}/signal", {
    params: { path: { processId: id } },
    body: { signal: "SIGTERM" },
  });
  const delivered: boolean = sig.data?.delivered ?? false;
  const { data } = await client.GET("/processes");
  // Results name the ending signal with the same vocabulary as the request.
  const ended = data?.processes.filter((p) => p.signal === "SIGTERM") ?? [];
  return delivered ? ended.map((p) => p.signal) : [];
}

// Lists the snapshot cache and prewarms a scope without waiting.
export async function snapshots(token: string): Promise<string[]> {
  const client = snapexec(token);
  const { data } = await client.GET("/snapshots");
  const states = data?.entries.map((e) => `${e.scopeId}: ${e.state}`) ?? [];
  const warm = await client.POST("/snapshots/{scopeId}/prewarm", {
    params: { path: { scopeId: "workspace-1" }, query: { wait: false } },
    body: { shell: { name: "bash", path: "/bin/bash" } },
  });
  return warm.data ? [...states, `${warm.data.scopeId}: ${warm.data.state}`] : states;
}

// The same /exec, streamed: the body is the event stream, left unparsed.
export async function execStream(token: string): Promise<ReadableStream<Uint8Array> | null> {
  const { data } = await snapexec(token).POST("/exec", {
    headers: { Accept: "text/event-stream" },
    body: { argv: ["make", "-j2"] },
    parseAs: "stream",
  });
  return data ?? null;
}

function problemText(p: Problem): string {
  return `${p.status} ${p.code}: ${p.detail ?? p.title} (request ${p.requestId})`;
}
