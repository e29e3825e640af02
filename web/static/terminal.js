// snapexec terminal view: xterm.js (vendored, pinned in tools/xterm) on the
// attach WebSocket of a process. The token, when one is needed, is the one the
// dashboard keeps in sessionStorage; it travels as a WebSocket subprotocol
// (a browser cannot set Authorization on a WebSocket), never in a URL.

import { Terminal } from "/ui/vendor/xterm.mjs";
import { FitAddon } from "/ui/vendor/addon-fit.mjs";

const TOKEN_KEY = "snapexec.token";
const SHELL_PATHS = { bash: "/bin/bash", zsh: "/bin/zsh", sh: "/bin/sh" };
const RECONNECT_MS = 1000;

const $ = (id) => document.getElementById(id);

function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

// base64url is s's UTF-8 bytes in unpadded base64url: a subprotocol is an
// HTTP token, which the '/' and '=' of a base64 token would break.
function base64url(s) {
  let bin = "";
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function setStatus(state, text) {
  const s = $("term-status");
  s.dataset.state = state;
  s.textContent = text;
}

// withConstructedStyles runs fn while the <style> elements it makes are
// stand-ins whose text goes into constructed stylesheets. xterm.js writes its
// computed rules (theme colours, cell size) into <style> elements, which the
// dashboard's strict CSP (style-src 'self') blocks; CSP leaves the CSS object
// model to the scripts it already trusts, so the same rules apply this way.
function withConstructedStyles(fn) {
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    if (String(tag).toLowerCase() !== "style") return create.call(this, tag, options);
    const doc = this, sheet = new CSSStyleSheet(), standIn = create.call(this, "template");
    let text = "";
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
    Object.defineProperty(standIn, "textContent", {
      get: () => text,
      set: (v) => {
        text = String(v);
        sheet.replaceSync(text);
      },
    });
    standIn.remove = function () {
      doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => s !== sheet);
      Element.prototype.remove.call(this);
    };
    return standIn;
  };
  try {
    return fn();
  } finally {
    Document.prototype.createElement = create;
  }
}

const term = new Terminal({ cursorBlink: true, convertEol: false, scrollback: 5000 });
const fit = new FitAddon();
term.loadAddon(fit);
withConstructedStyles(() => term.open($("terminal")));
fit.fit();
// For tests and for the curious: what the terminal shows, as text.
window.snapexecTerminal = {
  text() {
    const b = term.buffer.active, lines = [];
    for (let i = 0; i < b.length; i++) lines.push(b.getLine(i).translateToString(true));
    return lines.join("\n");
  },
  size: () => ({ cols: term.cols, rows: term.rows }),
  // drop closes the connection as a network failure would.
  drop: () => att.ws && att.ws.close(),
  opened: () => att.opened,
};

// One attachment at a time: its process id, the seq it has seen, its socket.
const att = { id: "", seq: 0, ws: null, ended: false, opened: 0 };
const encoder = new TextEncoder();

function send(data) {
  if (att.ws && att.ws.readyState === WebSocket.OPEN) att.ws.send(data);
}

term.onData((d) => send(encoder.encode(d)));
term.onBinary((d) => send(Uint8Array.from(d, (c) => c.charCodeAt(0))));
term.onResize(({ cols, rows }) => send(JSON.stringify({ type: "resize", cols, rows })));
window.addEventListener("resize", () => fit.fit());

function attach(id) {
  if (att.ws) {
    att.ended = true;
    att.ws.close();
  }
  Object.assign(att, { id, seq: 0, ws: null, ended: false });
  term.reset();
  history.replaceState(null, "", "#p=" + encodeURIComponent(id));
  connect();
}

// connect opens the socket, resuming after the last seq seen, and
// reconnects when it drops before the process has ended.
function connect() {
  const id = att.id;
  const url = new URL("/processes/" + encodeURIComponent(id) + "/attach", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("seqs", "true");
  if (att.seq > 0) url.searchParams.set("afterSeq", String(att.seq));
  const protocols = ["snapexec.v1"];
  if (token()) protocols.push("snapexec.bearer." + base64url(token()));
  const ws = new WebSocket(url, protocols);
  ws.binaryType = "arraybuffer";
  att.ws = ws;
  setStatus("connecting", "connecting to " + id + "…");
  ws.onopen = () => {
    att.opened++;
    setStatus("ok", "attached to " + id);
    send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
    term.focus();
  };
  ws.onmessage = (ev) => {
    if (ev.data instanceof ArrayBuffer) {
      term.write(new Uint8Array(ev.data));
      return;
    }
    const m = JSON.parse(ev.data);
    if (m.type === "seq") att.seq = m.seq;
    else if (m.type === "lost") att.seq = m.nextSeq - 1;
    else if (m.type === "exit") {
      att.ended = true;
      // exitCode and signal are null when absent; an ending may have neither.
      const how = m.signal ? m.signal : m.exitCode != null ? "exit " + m.exitCode : "";
      setStatus("ended", id + " ended: " + m.status + (how ? " (" + how + ")" : ""));
    }
  };
  ws.onclose = () => {
    if (att.ws !== ws || att.ended) return;
    setStatus("error", "disconnected from " + id + "; reconnecting…");
    setTimeout(() => {
      if (att.ws === ws && !att.ended) connect();
    }, RECONNECT_MS);
  };
}

async function open(ev) {
  ev.preventDefault();
  const shell = $("t-shell").value, path = $("t-path").value.trim();
  const body = {
    argv: shell === "sh" ? [path, "-i"] : [path, "-l"],
    tty: { cols: term.cols, rows: term.rows },
    envPolicy: { inherit: "core" },
    env: { TERM: "xterm-256color" },
  };
  const scope = $("t-scope").value.trim(), cwd = $("t-cwd").value.trim();
  if (scope) body.shellSnapshot = { scopeId: scope, shell: { name: shell, path } };
  if (cwd) body.cwd = cwd;
  const headers = { "Content-Type": "application/json", Accept: "application/json, application/problem+json" };
  if (token()) headers.Authorization = "Bearer " + token();
  let resp, data;
  try {
    resp = await fetch("/processes", { method: "POST", headers, body: JSON.stringify(body), cache: "no-store", credentials: "same-origin" });
    data = await resp.json();
  } catch (err) {
    setStatus("error", "could not start the terminal: " + (err && err.message || err));
    return;
  }
  if (!resp.ok) {
    setStatus("error", "could not start the terminal: " + (data.code || resp.status) + (data.detail ? ": " + data.detail : ""));
    return;
  }
  $("t-id").value = data.processId;
  attach(data.processId);
}

$("t-shell").addEventListener("change", () => {
  $("t-path").value = SHELL_PATHS[$("t-shell").value] || "";
});
$("open-form").addEventListener("submit", open);
$("attach-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const id = $("t-id").value.trim();
  if (id) attach(id);
});

const initial = new URLSearchParams(location.hash.slice(1)).get("p");
if (initial) {
  $("t-id").value = initial;
  attach(initial);
}
