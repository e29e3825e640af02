// snapexec status dashboard. Plain ES2020 module, no dependencies: it polls the
// server's own API (same origin, relative paths) and renders into the page.
// The token, when one is needed, lives in sessionStorage and travels only as an
// Authorization header; it never goes into a URL.

const POLL_MS = 2000;
const TOKEN_KEY = "snapexec.token";
const OUTCOME_STATES = ["cache_hit", "prewarm_ready", "on_demand", "capture_pending", "prewarm_pending", "unavailable"];
const DEFAULT_SHELL_PATHS = { bash: "/bin/bash", zsh: "/bin/zsh", sh: "/bin/sh" };
const SVG_NS = "http://www.w3.org/2000/svg";

const $ = (id) => document.getElementById(id);

// ---------- token ----------

function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: the token lasts as long as the page */
  }
  memoryToken = t;
}

let memoryToken = getToken();

// ---------- HTTP ----------

// api sends one request to the server and returns
// {ok, status, data, problem, network}. problem is the parsed problem+json
// (or a synthesized one); network is true when the request never got an answer.
async function api(method, path, body) {
  const headers = { Accept: "application/json, application/problem+json" };
  if (memoryToken) headers.Authorization = "Bearer " + memoryToken;
  const init = { method, headers, cache: "no-store", credentials: "same-origin", redirect: "error" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (err) {
    return { ok: false, status: 0, network: true, problem: { code: "network_error", detail: String(err && err.message || err) } };
  }
  let data = null;
  const text = await resp.text().catch(() => "");
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (resp.status === 401) showAuthPrompt(true);
  if (!resp.ok) {
    const problem = data && typeof data === "object" && data.code
      ? data
      : { code: "http_" + resp.status, status: resp.status, detail: (text || resp.statusText || "").slice(0, 300) };
    return { ok: false, status: resp.status, data, problem };
  }
  return { ok: true, status: resp.status, data };
}

function problemText(p) {
  if (!p) return "unknown error";
  let s = p.code || ("HTTP " + (p.status || "?"));
  if (p.status && p.code && !String(p.code).startsWith("http_")) s += " (" + p.status + ")";
  if (p.detail) s += ": " + p.detail;
  else if (p.title) s += ": " + p.title;
  if (p.field) s += " [field " + p.field + "]";
  return s;
}

// ---------- formatting ----------

function fmtDuration(ms) {
  if (ms == null || !isFinite(ms)) return "–";
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + " s";
  const total = Math.floor(s);
  const d = Math.floor(total / 86400), h = Math.floor((total % 86400) / 3600);
  const m = Math.floor((total % 3600) / 60), sec = total % 60;
  if (d > 0) return `${d}d ${h}h ${String(m).padStart(2, "0")}m`;
  if (h > 0) return `${h}h ${String(m).padStart(2, "0")}m ${String(sec).padStart(2, "0")}s`;
  return `${m}m ${String(sec).padStart(2, "0")}s`;
}

function fmtMs(ms) {
  if (ms == null || !isFinite(ms)) return "–";
  if (ms < 10) return ms.toFixed(2) + " ms";
  if (ms < 1000) return ms.toFixed(ms < 100 ? 1 : 0) + " ms";
  return (ms / 1000).toFixed(2) + " s";
}

function fmtBytes(n) {
  if (n == null || !isFinite(n)) return "–";
  if (n < 1024) return n + " B";
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n, i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return v.toFixed(v < 10 ? 1 : 0) + " " + units[i];
}

function fmtTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function fmtCountdown(ms) {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  return m + "m " + String(s % 60).padStart(2, "0") + "s";
}

// quoteArg shows an argv element as a shell would need it, for reading only.
function quoteArg(a) {
  if (a === "") return "''";
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a)) return a;
  return "'" + a.replace(/'/g, "'\\''") + "'";
}

// ---------- DOM helpers ----------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text != null) e.textContent = text;
  return e;
}

function setText(node, text) {
  text = String(text);
  if (node.textContent !== text) node.textContent = text;
}

function setAttr(node, name, value) {
  if (value == null) {
    if (node.hasAttribute(name)) node.removeAttribute(name);
  } else if (node.getAttribute(name) !== String(value)) {
    node.setAttribute(name, String(value));
  }
}

// reconcile keeps one <tr> per key in tbody, in the order of items: existing
// rows are updated in place (so buttons survive polls), new ones created, and
// rows whose key is gone removed.
function reconcile(tbody, items, keyOf, create, update) {
  const existing = new Map();
  for (const tr of Array.from(tbody.children)) existing.set(tr.dataset.key, tr);
  let prev = null;
  for (const item of items) {
    const key = keyOf(item);
    let tr = existing.get(key);
    if (tr) existing.delete(key);
    else {
      tr = create(item);
      tr.dataset.key = key;
    }
    update(tr, item);
    const want = prev ? prev.nextSibling : tbody.firstChild;
    if (want !== tr) tbody.insertBefore(tr, want);
    prev = tr;
  }
  for (const tr of existing.values()) tr.remove();
}

function cell(label, cls) {
  return el("td", { "data-label": label, class: cls });
}

// ---------- state ----------

const state = {
  stats: null,
  statsAt: 0, // performance.now() when stats arrived, to tick the uptime
  inFlight: false,
  again: false,
  timer: 0,
  busy: new Set(), // action keys in flight, so a button is not pressed twice
  actionSeq: 0, // bumped when an action completes: a poll round begun before it is stale
};

// ---------- connection / banners ----------

function showAuthPrompt(show) {
  $("auth-prompt").hidden = !show;
  if (show && document.activeElement !== $("token-input")) {
    $("token-input").classList.add("attention");
  } else if (!show) {
    $("token-input").classList.remove("attention");
  }
}

function setConn(kind, text, detail) {
  const c = $("conn");
  c.dataset.state = kind;
  setText(c, text);
  document.body.dataset.conn = kind;
  const d = $("disconnected");
  d.hidden = kind !== "disconnected";
  if (kind === "disconnected") setText($("disconnected-detail"), detail || "no answer");
}

// ---------- action result ----------

function showResult(action, ok, text, requestId) {
  const r = $("action-result");
  r.dataset.status = ok ? "ok" : "error";
  r.dataset.action = action;
  r.setAttribute("role", ok ? "status" : "alert");
  const when = new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  r.textContent = "";
  r.append(el("span", { class: "result-icon", "aria-hidden": "true", text: ok ? "✓" : "✗" }), " ", text, " ",
    el("time", { class: "result-time", text: when }));
  if (requestId) r.append(el("span", { class: "result-req", "data-testid": "request-id", text: "request " + requestId }));
}

function showPending(action, text) {
  const r = $("action-result");
  r.dataset.status = "pending";
  r.dataset.action = action;
  r.setAttribute("role", "status");
  r.textContent = text;
}

// ---------- polling ----------

function schedule(delay) {
  clearTimeout(state.timer);
  state.timer = setTimeout(poll, delay);
}

// refreshNow polls at once, or right after the round in flight.
function refreshNow() {
  if (state.inFlight) state.again = true;
  else schedule(0);
}

async function poll() {
  clearTimeout(state.timer);
  if (state.inFlight) {
    state.again = true;
    return;
  }
  if (document.visibilityState === "hidden") {
    return; // resumed by visibilitychange
  }
  state.inFlight = true;
  const seq = state.actionSeq;
  try {
    const [stats, snaps, procs] = await Promise.all([api("GET", "/stats"), api("GET", "/snapshots"), api("GET", "/processes")]);
    const all = [stats, snaps, procs];
    const unauthorized = all.some((r) => r.status === 401);
    const failed = all.find((r) => !r.ok);
    if (unauthorized) {
      setConn("unauthorized", "token required");
    } else if (failed) {
      setConn("disconnected", "disconnected", failed.network ? "the server did not answer (" + failed.problem.detail + ")" : problemText(failed.problem));
    } else {
      setConn("connected", "live");
      showAuthPrompt(false);
    }
    if (stats.ok) renderStats(stats.data);
    if (seq !== state.actionSeq) {
      state.again = true; // an action finished meanwhile: this registry may predate it
    } else {
      if (snaps.ok) renderSnapshots(snaps.data);
      if (procs.ok) renderProcesses(procs.data);
    }
    if (!failed) setText($("last-update"), new Date().toLocaleTimeString());
  } catch (err) {
    setConn("disconnected", "disconnected", String(err && err.message || err));
    console.error(err);
  } finally {
    state.inFlight = false;
    if (state.again) {
      state.again = false;
      schedule(0);
    } else {
      schedule(POLL_MS);
    }
  }
}

// ---------- stats ----------

function renderStats(s) {
  if (!s || typeof s !== "object") return;
  state.stats = s;
  state.statsAt = performance.now();
  setText($("version"), s.version || "–");
  tickUptime();
  const sn = s.snapshots || {};
  setText($("sum-cache"), `${sn.cached ?? "–"} / ${sn.capacity ?? "–"}`);
  const cap = sn.captures || {};
  setText($("sum-captures"), `${cap.success ?? 0} / ${cap.failure ?? 0}`);
  $("sum-captures").classList.toggle("has-failures", (cap.failure || 0) > 0);
  const sb = sn.standby || {};
  setText($("sum-standby"), `${sb.idle ?? 0} / ${sb.max ?? 0}`);
  setText($("sum-standby-sub"), `waiting of max · ran ${sb.hit ?? 0}, missed ${sb.miss ?? 0}, unfit ${sb.unfit ?? 0}`);
  const p = s.processes || {};
  const fin = p.finished || {};
  setText($("sum-procs"), String(p.running ?? 0));
  setText($("sum-procs-sub"), `running · finished ${fin.success ?? 0} ok, ${fin.error ?? 0} error, ${fin.terminated ?? 0} terminated`);
  const escaped = p.escaped ?? 0;
  setText($("sum-escaped"), `${escaped} escaped`);
  $("sum-escaped").classList.toggle("warn-text", escaped > 0);
  const ss = s.sessions || {};
  setText($("sum-sessions"), `${ss.active ?? 0} / ${ss.busy ?? 0}`);
  setText($("sum-sessions-sub"), `held / running · ${ss.commands ?? 0} commands, ${ss.stateLost ?? 0} kept the state before them`);
  const h = s.http || {};
  setText($("sum-http"), `${h.requests ?? 0} / ${h.errors ?? 0}`);
  const q = sn.captureLatencyMs || {};
  setText($("q-count"), String(q.count ?? 0));
  setText($("q-p50"), fmtMs(q.p50));
  setText($("q-p90"), fmtMs(q.p90));
  setText($("q-p99"), fmtMs(q.p99));
  renderChart(Array.isArray(sn.recentCaptures) ? sn.recentCaptures : [], q);
  renderOutcomes(sn.commands || {});
}

function tickUptime() {
  const s = state.stats;
  if (!s || s.uptimeMs == null || document.body.dataset.conn !== "connected") return;
  const ms = s.uptimeMs + (performance.now() - state.statsAt);
  setText($("uptime"), fmtDuration(ms));
  $("uptime").setAttribute("title", s.startedAt ? "since " + new Date(s.startedAt).toLocaleString() : "");
}

function renderOutcomes(commands) {
  const states = OUTCOME_STATES.concat(Object.keys(commands).filter((k) => !OUTCOME_STATES.includes(k)).sort());
  reconcile($("outcome-rows"), states, (k) => k,
    (k) => {
      const tr = el("tr", { "data-testid": "outcome-row", "data-state": k });
      tr.append(el("th", { scope: "row", "data-label": "State" }, el("code", { text: k })),
        cell("Used", "num used"), cell("Fallback", "num fallback"), cell("Total", "num total"));
      return tr;
    },
    (tr, k) => {
      const c = commands[k] || {};
      const used = c.used || 0, fb = c.fallback || 0;
      setText(tr.children[1], used);
      setText(tr.children[2], fb);
      setText(tr.children[3], used + fb);
      tr.children[2].classList.toggle("warn-text", fb > 0);
      tr.classList.toggle("zero", used + fb === 0);
    });
}

// ---------- chart ----------

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 3, 4, 6, 8, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

let lastChart = null;

function renderChart(points, q) {
  lastChart = [points, q];
  const box = $("latency-chart");
  box.textContent = "";
  const data = points
    .map((p) => ({ t: Date.parse(p.at), ms: Number(p.ms), ok: !!p.success, at: p.at }))
    .filter((p) => isFinite(p.t) && isFinite(p.ms));
  if (data.length === 0) {
    box.append(el("p", { class: "empty", text: "No captures yet." }));
    box.setAttribute("aria-label", "Capture latency over time: no captures yet");
    return;
  }
  // Drawn at the box's own width, so that text stays at its CSS size.
  const W = Math.max(280, Math.round(box.clientWidth || 640)), H = W < 480 ? 190 : 220, L = 52, R = 30, T = 12, B = 30;
  const t0 = Math.min(...data.map((d) => d.t));
  let t1 = Math.max(...data.map((d) => d.t));
  if (t1 === t0) t1 = t0 + 1000;
  const yMax = niceMax(Math.max(...data.map((d) => d.ms), q.p99 || 0));
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (ms) => T + (1 - ms / yMax) * (H - T - B);

  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", "data-testid": "latency-svg", role: "presentation" });
  // grid and y labels
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    root.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
    root.append(svg("text", { x: L - 6, y: y(v) + 4, class: "axis-label", "text-anchor": "end" }, v === 0 ? "0" : fmtMs(v)));
  }
  // x labels: first, middle, last
  const ticks = t1 - t0 <= 1000 ? [t0] : W < 420 ? [t0, t1] : [t0, (t0 + t1) / 2, t1];
  for (const t of ticks) {
    const anchor = t === t0 ? "start" : t === t1 ? "end" : "middle";
    root.append(svg("text", { x: x(t), y: H - 8, class: "axis-label", "text-anchor": anchor }, fmtTime(new Date(t).toISOString())));
  }
  root.append(svg("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }));
  root.append(svg("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }));
  // quantile lines
  for (const [name, v] of [["p50", q.p50], ["p90", q.p90]]) {
    if (v == null || !isFinite(v)) continue;
    root.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "quantile " + name }));
    root.append(svg("text", { x: W - R + 3, y: y(v) + 3, class: "quantile-label", "text-anchor": "start" }, name));
  }
  // successful captures joined by a line
  const ok = data.filter((d) => d.ok);
  if (ok.length > 1) {
    root.append(svg("polyline", { points: ok.map((d) => `${x(d.t).toFixed(1)},${y(d.ms).toFixed(1)}`).join(" "), class: "series" }));
  }
  for (const d of data) {
    const g = svg("g", { class: d.ok ? "pt ok" : "pt fail", "data-testid": d.ok ? "capture-ok" : "capture-failed" });
    const cx = x(d.t), cy = y(d.ms);
    if (d.ok) {
      g.append(svg("circle", { cx, cy, r: 4 }));
    } else {
      const s = 5;
      g.append(svg("path", { d: `M${cx - s},${cy - s}L${cx + s},${cy + s}M${cx - s},${cy + s}L${cx + s},${cy - s}` }));
    }
    g.append(svg("title", {}, `${fmtTime(d.at)} · ${fmtMs(d.ms)} · ${d.ok ? "captured" : "failed"}`));
    root.append(g);
  }
  box.append(root);
  const legend = el("p", { class: "legend" },
    el("span", { class: "key ok", "aria-hidden": "true" }), " captured ",
    el("span", { class: "key fail", "aria-hidden": "true" }), " failed ",
    el("span", { class: "key q", "aria-hidden": "true" }), " p50 / p90");
  box.append(legend);
  const fails = data.length - ok.length;
  box.setAttribute("aria-label", `Capture latency over time: ${data.length} recent captures, ${fails} failed, up to ${fmtMs(Math.max(...data.map((d) => d.ms)))}`);
}

// ---------- snapshots ----------

function renderSnapshots(list) {
  const entries = list && Array.isArray(list.entries) ? list.entries : [];
  setText($("snap-capacity"), `${entries.length} of ${list && list.capacity != null ? list.capacity : "?"} entries, least recently used first.`);
  $("snapshot-empty").hidden = entries.length > 0;
  reconcile($("snapshot-rows"), entries, (e) => "k:" + (e.key || e.scopeId + "\u0000" + (e.cwd || "")), createSnapshotRow, updateSnapshotRow);
  tickCountdowns();
}

function createSnapshotRow(e) {
  const tr = el("tr", { "data-testid": "snapshot-row" });
  const scope = el("th", { scope: "row", "data-label": "Scope", class: "scope" }, el("code", { "data-testid": "scope-id" }));
  const badge = el("span", { class: "badge", "data-testid": "state-badge" });
  const retry = cell("Retry", "retry");
  const forget = el("button", { type: "button", class: "danger small", "data-testid": "forget-button" }, "Forget");
  forget.addEventListener("click", () => forgetScope(tr.dataset.scope, forget));
  tr.append(scope, cell("Shell", "shell"), cell("Cwd", "cwd"), el("td", { "data-label": "State" }, badge),
    cell("Attempts", "attempts"), retry, cell("Prewarmed", "prewarmed"), cell("Hits", "num hits"),
    cell("Size", "num size"), cell("Capture", "num capture"), cell("Last error", "error"),
    el("td", { "data-label": "Actions", class: "actions" }, forget));
  return tr;
}

function updateSnapshotRow(tr, e) {
  const [scope, shell, cwd, stateTd, attempts, retry, prewarmed, hits, size, capture, error] = tr.children;
  tr.dataset.scope = e.scopeId;
  tr.dataset.state = e.state;
  setText(scope.firstChild, e.scopeId);
  const about = [];
  if (e.envNames && e.envNames.length) about.push("env: " + e.envNames.join(" "));
  if (e.envPolicy) about.push(policyText(e.envPolicy));
  setAttr(scope, "title", about.length ? about.join("\n") : null);
  const sh = e.shell || {};
  // A login terminal's snapshot is kept apart from its scope's commands'.
  setText(shell, (sh.name || "–") + (e.terminal ? " · terminal" : ""));
  setAttr(shell, "title", sh.path ? sh.path + (e.terminal ? " (login terminals' snapshot)" : "") : null);
  setText(cwd, e.cwd || "–");
  setAttr(cwd, "title", e.cwd || null);
  const badge = stateTd.firstChild;
  badge.className = "badge state-" + e.state;
  badge.dataset.state = e.state;
  setText(badge, e.state);
  setText(attempts, `${e.attempts ?? 0} of ${e.maxAttempts ?? "?"}`);

  // The countdown: shown for a failed entry (in backoff or retryable).
  let cd = retry.querySelector("[data-testid=countdown]");
  if (e.state === "failed" || (e.retryAt && e.state !== "ready" && e.state !== "exhausted")) {
    if (!cd) {
      retry.textContent = "";
      cd = el("span", { class: "countdown", "data-testid": "countdown", role: "timer" });
      retry.append(cd);
    }
    setAttr(cd, "data-retry-at", e.retryAt || null);
  } else {
    if (cd) cd.remove();
    setText(retry, e.state === "exhausted" ? "no more retries" : "–");
  }
  setText(prewarmed, e.prewarmed ? "yes" : "no");
  prewarmed.classList.toggle("yes", !!e.prewarmed);
  setText(hits, e.hits ?? 0);
  setText(size, e.state === "ready" || e.stateBytes ? fmtBytes(e.stateBytes) : "–");
  setAttr(size, "title", e.state === "ready" ? `${e.envCount ?? 0} variables, ${e.functionCount ?? 0} functions, ${e.aliasCount ?? 0} aliases, ${e.optionCount ?? 0} options` : null);
  setText(capture, e.captureMs != null ? fmtMs(e.captureMs) : "–");
  setAttr(capture, "title", e.capturedAt ? "captured " + new Date(e.capturedAt).toLocaleString() : null);
  if (e.lastError) {
    let r = error.querySelector(".reason");
    if (!r) {
      error.textContent = "";
      r = el("code", { class: "reason", "data-testid": "error-reason" });
      error.append(el("span", { class: "err", "data-testid": "last-error" }, r, " ", el("span", { class: "message", "data-testid": "error-message" })));
    }
    setText(r, e.lastError.reason || "error");
    setText(error.querySelector(".message"), e.lastError.message || "");
    setAttr(error, "title", e.lastError.message || null);
  } else {
    setText(error, "–");
    setAttr(error, "title", null);
  }
  const forget = tr.querySelector("[data-testid=forget-button]");
  setAttr(forget, "aria-label", "Forget scope " + e.scopeId);
  forget.dataset.scope = e.scopeId;
}

// policyText shows an entry's envPolicy: names and patterns only, as the
// server sends it (it never sends set's values).
function policyText(p) {
  let s = "envPolicy: inherit " + (p.inherit || "all");
  if (p.ignoreDefaultExcludes) s += ", default excludes off";
  if (p.exclude && p.exclude.length) s += ", exclude " + p.exclude.join(" ");
  if (p.setNames && p.setNames.length) s += ", set " + p.setNames.join(" ");
  if (p.includeOnly && p.includeOnly.length) s += ", include only " + p.includeOnly.join(" ");
  return s;
}

function tickCountdowns() {
  const now = Date.now();
  for (const cd of document.querySelectorAll("[data-testid=countdown]")) {
    const at = cd.dataset.retryAt ? Date.parse(cd.dataset.retryAt) : NaN;
    let text, due;
    if (!isFinite(at)) {
      text = "retry on next use";
      due = true;
    } else if (at > now) {
      text = "retry in " + fmtCountdown(at - now);
      due = false;
    } else {
      text = "retry due";
      due = true;
    }
    setText(cd, text);
    cd.classList.toggle("due", due);
    cd.dataset.remainingS = isFinite(at) ? String(Math.max(0, Math.ceil((at - now) / 1000))) : "";
    if (isFinite(at)) setAttr(cd, "title", "retry at " + new Date(at).toLocaleTimeString());
  }
}

async function prewarm(ev) {
  ev.preventDefault();
  const scope = $("pw-scope").value;
  const name = $("pw-shell").value;
  const path = $("pw-path").value.trim();
  const cwd = $("pw-cwd").value.trim();
  const terminal = $("pw-terminal").checked;
  if (!scope) {
    showResult("prewarm", false, "Prewarm: enter a scope id.");
    $("pw-scope").focus();
    return;
  }
  const busyKey = "prewarm:" + scope;
  if (state.busy.has(busyKey)) return;
  state.busy.add(busyKey);
  const btn = $("pw-submit");
  btn.disabled = true;
  btn.setAttribute("aria-busy", "true");
  showPending("prewarm", `Prewarming scope “${scope}”…`); // the next poll shows the pending entry
  const body = { shell: { name, path } };
  if (cwd) body.cwd = cwd;
  if (terminal) body.terminal = true;
  try {
    const r = await api("POST", "/snapshots/" + encodeURIComponent(scope) + "/prewarm", body);
    const e = (r.ok && r.data) || {};
    if (r.ok && (e.state === "failed" || e.state === "exhausted")) {
      // 200 with an entry that an earlier capture left failed.
      const why = e.lastError ? `: ${e.lastError.reason}: ${e.lastError.message}` : "";
      showResult("prewarm", false, `Prewarm of “${scope}”: the entry is ${e.state}${why}`);
    } else if (r.ok && (r.status === 202 || e.state === "pending")) {
      showResult("prewarm", true, `Prewarm of “${scope}” started; the capture is pending.`);
    } else if (r.ok) {
      const took = e.captureMs != null ? ` in ${fmtMs(e.captureMs)}` : "";
      showResult("prewarm", true, `Prewarmed scope “${scope}”: ${e.state || "ok"}${took}.`);
    } else {
      showResult("prewarm", false, `Prewarm of “${scope}” failed: ${problemText(r.problem)}`, r.problem && r.problem.requestId);
    }
  } finally {
    state.busy.delete(busyKey);
    state.actionSeq++;
    btn.disabled = false;
    btn.removeAttribute("aria-busy");
    refreshNow();
  }
}

async function forgetScope(scope, btn) {
  if (scope == null) return;
  const busyKey = "forget:" + scope;
  if (state.busy.has(busyKey)) return;
  state.busy.add(busyKey);
  btn.disabled = true;
  showPending("forget", `Forgetting scope “${scope}”…`);
  try {
    const r = await api("DELETE", "/snapshots/" + encodeURIComponent(scope));
    if (r.ok) {
      showResult("forget", true, `Forgot scope “${scope}”.`);
      // Drop its rows at once; the next poll confirms.
      for (const tr of Array.from($("snapshot-rows").children)) if (tr.dataset.scope === scope) tr.remove();
      $("snapshot-empty").hidden = $("snapshot-rows").children.length > 0;
    } else {
      showResult("forget", false, `Forget of “${scope}” failed: ${problemText(r.problem)}`, r.problem && r.problem.requestId);
    }
  } finally {
    state.busy.delete(busyKey);
    state.actionSeq++;
    btn.disabled = false;
    refreshNow();
  }
}

// ---------- processes ----------

function renderProcesses(list) {
  const procs = list && Array.isArray(list.processes) ? list.processes.slice() : [];
  // running first (oldest first), then finished, newest first.
  procs.sort((a, b) => {
    const ra = a.status === "running", rb = b.status === "running";
    if (ra !== rb) return ra ? -1 : 1;
    const ta = Date.parse(a.startedAt) || 0, tb = Date.parse(b.startedAt) || 0;
    return ra ? ta - tb : tb - ta;
  });
  $("process-empty").hidden = procs.length > 0;
  reconcile($("process-rows"), procs, (p) => "p:" + p.processId, createProcessRow, updateProcessRow);
}

function createProcessRow(p) {
  const tr = el("tr", { "data-testid": "process-row" });
  tr.append(el("th", { scope: "row", "data-label": "Process", class: "pid" }, el("code", { "data-testid": "process-id" })),
    cell("Argv", "argv"), el("td", { "data-label": "Status" }, el("span", { class: "badge", "data-testid": "status-badge" })),
    cell("Duration", "num duration"), cell("Exit", "exit"), cell("Started", "started"), cell("Actions", "actions"));
  return tr;
}

function updateProcessRow(tr, p) {
  const [id, argv, statusTd, duration, exit, started, actions] = tr.children;
  tr.dataset.processId = p.processId;
  tr.dataset.status = p.status;
  setText(id.firstChild, p.processId);
  setAttr(id, "title", p.pid != null ? "pid " + p.pid : null);
  const joined = (p.argv || []).map(quoteArg).join(" ");
  setText(argv, joined);
  setAttr(argv, "title", (p.cwd ? "cwd " + p.cwd + "\n" : "") + joined);
  const badge = statusTd.firstChild;
  badge.className = "badge status-" + p.status;
  badge.dataset.status = p.status;
  setText(badge, p.status);
  setText(duration, fmtDuration(p.durationMs));
  let exitText = "–";
  if (p.status !== "running") {
    if (p.signal) exitText = p.signal + (p.exitCode != null ? " (exit " + p.exitCode + ")" : "");
    else if (p.exitCode != null) exitText = "exit " + p.exitCode;
  }
  setText(exit, exitText);
  exit.classList.toggle("warn-text", p.status !== "running" && (p.exitCode !== 0 || !!p.signal));
  setText(started, fmtTime(p.startedAt));
  setAttr(started, "title", p.startedAt ? new Date(p.startedAt).toLocaleString() : null);
  let link = actions.querySelector("[data-testid=attach-link]");
  if (p.status === "running") {
    if (!link) {
      // rel=opener: the terminal's tab gets a copy of this tab's session
      // storage, and so the token.
      link = el("a", { class: "small", target: "_blank", rel: "opener", "data-testid": "attach-link" }, "Attach");
      actions.append(link);
    }
    setAttr(link, "href", "/ui/terminal.html#p=" + encodeURIComponent(p.processId));
    setAttr(link, "aria-label", "Attach to process " + p.processId + " in a terminal");
  } else if (link) {
    link.remove();
  }
  let btn = actions.querySelector("[data-testid=terminate-button]");
  if (p.status === "running") {
    if (!btn) {
      btn = el("button", { type: "button", class: "danger small", "data-testid": "terminate-button" }, "Terminate");
      btn.addEventListener("click", () => terminate(tr.dataset.processId, btn));
      actions.append(btn);
    }
    setAttr(btn, "aria-label", "Terminate process " + p.processId);
  } else if (btn) {
    btn.remove();
  }
}

async function terminate(id, btn) {
  const busyKey = "terminate:" + id;
  if (state.busy.has(busyKey)) return;
  state.busy.add(busyKey);
  btn.disabled = true;
  showPending("terminate", `Terminating process ${id}…`);
  try {
    const r = await api("DELETE", "/processes/" + encodeURIComponent(id));
    if (r.ok) {
      const was = r.data && r.data.running === false ? " (it had already ended)" : "";
      showResult("terminate", true, `Terminated process ${id}${was}.`);
    } else {
      showResult("terminate", false, `Terminate of ${id} failed: ${problemText(r.problem)}`, r.problem && r.problem.requestId);
    }
  } finally {
    state.busy.delete(busyKey);
    state.actionSeq++;
    btn.disabled = false;
    refreshNow();
  }
}

// ---------- wiring ----------

function init() {
  $("token-input").value = memoryToken ? memoryToken : "";
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token-input").value.trim();
    setToken(t);
    $("token-input").classList.remove("attention");
    showResult("token", true, t ? "Token saved for this tab; retrying." : "Token cleared.");
    refreshNow();
  });
  $("token-clear").addEventListener("click", () => {
    setToken("");
    $("token-input").value = "";
    showResult("token", true, "Token forgotten.");
    refreshNow();
  });
  $("prewarm-form").addEventListener("submit", prewarm);
  $("pw-shell").addEventListener("change", () => {
    const path = $("pw-path");
    if (!path.value || Object.values(DEFAULT_SHELL_PATHS).includes(path.value)) {
      path.value = DEFAULT_SHELL_PATHS[$("pw-shell").value] || "";
    }
  });
  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => lastChart && renderChart(...lastChart), 150);
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refreshNow();
  });
  setInterval(() => {
    tickCountdowns();
    tickUptime();
  }, 1000);
  poll();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
else init();
