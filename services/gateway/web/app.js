// The Praetor page: start a session with an engine, chat, and watch the
// sidebar (phase, progress, obligations, background research) update with
// every reply. When the engine hands the conversation to another engine,
// the page follows it: the next message goes to the new session. The
// session is in the address (?session=ID): a reload, or another tab, picks
// the conversation up where it is.
"use strict";
const $ = (id) => document.getElementById(id);
let session = null;
let stream = null;
// The turns on the page by turn id: their message line and reply line.
let lines = new Map();
// Turns whose reply is on the page (it may come both ways).
let shown = new Set();
// Posts of this page not yet answered with their turn id, and the replies
// of the stream it cannot place meanwhile: a reply of an unknown turn may
// be one of those posts' (their answer and the stream race), or another
// tab's. While the session's history loads, every reply waits.
let inflight = 0;
let held = [];
let loading = false;
// The session's background tasks (GET .../tasks), by id: what the sidebar's
// section of them does not say (a failure's note).
let tasks = new Map();
// The sidebar on the page and its phase, drawn again with new tasks.
let sidebarShown = [null, ""];
// A message the server could not be reached for, with its Idempotency-Key:
// sent again unchanged, it is the same turn if the first try got through.
let unsent = null;
// The error the stream's "error" event put on the page, cleared once the
// stream is back.
let streamError = null;

// unreachable is the error of a request that got no answer at all.
class Unreachable extends Error {}

async function api(method, path, body, headers = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: body ? { "Content-Type": "application/json", ...headers } : headers,
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    throw new Unreachable("Cannot reach the Praetor server (is praetor dev still running?).");
  }
  const data = await res.json().catch(() => ({}));
  if (res.status === 401) {
    throw new Error(`${data.error || "unauthorized"} — without a token the page works only from the machine running praetor dev (http://127.0.0.1:…)`);
  }
  if (!res.ok) {
    const err = new Error(data.error || `${res.status} ${res.statusText}`);
    err.status = res.status;
    throw err;
  }
  return data;
}

function showError(err) {
  $("error").textContent = err ? String(err.message || err) : "";
  $("error").hidden = !err;
}

// addLine adds a line to the chat, at the end or before another; kind is
// its class and test id (user, reply, pending, system).
function addLine(kind, text, before = null) {
  const li = document.createElement("li");
  li.className = kind === "pending" ? "reply pending" : kind;
  li.textContent = text;
  li.dataset.testid = kind;
  $("log").insertBefore(li, before);
  li.scrollIntoView({ block: "end" });
  return li;
}

function fillReply(li, t) {
  li.className = t.degraded ? "reply degraded" : "reply";
  li.dataset.testid = "reply";
  li.dataset.turn = t.turn_id;
  li.textContent = t.reply;
}

// drawTurn puts a turn read from the API on the page: its message, and its
// reply or a line waiting for it.
function drawTurn(t) {
  const asked = addLine("user", t.message);
  asked.dataset.turn = t.turn_id;
  const reply = addLine("pending", "…");
  if (t.status === "answered") {
    shown.add(t.turn_id);
    fillReply(reply, t);
  } else {
    asked.dataset.waiting = "1";
  }
  lines.set(t.turn_id, { asked, reply });
}

// showReply puts a turn's reply on the page once: on the line of the turn
// it answers, or, for a turn of another tab, as a turn of its own before
// this page's turns still waiting (a session answers its turns in order).
function showReply(t) {
  if (shown.has(t.turn_id)) return;
  let own = lines.get(t.turn_id);
  if (!own && (loading || inflight > 0)) {
    held.push(t);
    return;
  }
  shown.add(t.turn_id);
  if (!own) {
    const before = $("log").querySelector("li[data-waiting]");
    own = { asked: addLine("user", t.message || "…", before), reply: addLine("pending", "…", before) };
    own.asked.dataset.turn = t.turn_id;
    lines.set(t.turn_id, own);
    if (!t.message) {
      const sid = session.session_id;
      api("GET", `/v1/sessions/${sid}/turns/${t.turn_id}`)
        .then((v) => { own.asked.textContent = v.message; })
        .catch(() => { own.asked.textContent = "(a message sent from another tab)"; });
    }
  }
  delete own.asked.dataset.waiting;
  fillReply(own.reply, t);
  own.reply.scrollIntoView({ block: "end" });
  if (t.sidebar) renderSidebar(t.sidebar, t.phase);
}

// placeHeld shows the replies held back once they can be placed.
function placeHeld() {
  const replies = held;
  held = [];
  for (const t of replies) showReply(t);
}

function renderSidebar(sb, phase) {
  sidebarShown = [sb, phase];
  const pi = sb && sb.phase_indicator;
  $("phase").textContent = pi ? `Phase ${pi.order}/${pi.total}: ${pi.label}` : (phase ? `Phase: ${phase}` : "");
  $("phase").dataset.phase = pi ? pi.current_phase : (phase || "");
  const pb = sb && sb.progress_bar;
  $("progress").hidden = !(pb && pb.visible);
  if (pb) {
    $("bar").style.width = pb.percentage + "%";
    $("pct").textContent = pb.show_percentage ? pb.percentage + "%" : "";
    $("progress").dataset.percentage = pb.percentage;
  }
  const box = $("sections");
  box.replaceChildren();
  for (const s of (sb && sb.sections) || []) {
    if (!s.visible) continue;
    const div = document.createElement("div");
    div.className = "section";
    div.dataset.section = s.id;
    const h = document.createElement("h3");
    h.textContent = s.title;
    div.appendChild(h);
    const ul = document.createElement("ul");
    for (const it of s.items || []) {
      ul.appendChild(s.id === "background_tasks" ? taskItem(it) : obligationItem(it));
    }
    div.appendChild(ul);
    box.appendChild(div);
  }
}

function obligationItem(it) {
  const li = document.createElement("li");
  li.dataset.testid = "obligation";
  li.dataset.obligation = it.obligation_id;
  li.dataset.status = it.status;
  const label = document.createElement("span");
  label.textContent = it.label;
  const st = document.createElement("span");
  st.className = "status " + it.status;
  st.textContent = it.status + (it.confidence ? " " + Math.round(it.confidence * 100) + "%" : "");
  li.append(label, st);
  return li;
}

// taskItem is a background task of the engine's sidebar section, with the
// note or error the tasks API gives it.
function taskItem(it) {
  const t = tasks.get(it.obligation_id) || {};
  const li = document.createElement("li");
  li.dataset.testid = "task";
  li.dataset.task = it.obligation_id;
  li.dataset.status = it.status;
  const label = document.createElement("span");
  label.textContent = it.label;
  label.title = t.note || t.error || "";
  const st = document.createElement("span");
  st.className = "status " + it.status;
  st.textContent = it.status === "stalled" ? "waiting" : it.status;
  li.append(label, st);
  return li;
}

// Sessions the page has switched to after a handoff, so a handoff is
// followed once whichever way the page learns of it.
const followed = new Set();

// follow switches to the session a handoff started: the conversation goes
// on there, the chat so far stays on the page.
async function follow(h) {
  if (!h || !h.target_session_id || followed.has(h.target_session_id)) return;
  followed.add(h.target_session_id);
  addLine("system", handedOff(h) + " Your next message goes there.");
  try {
    const next = await api("GET", `/v1/sessions/${h.target_session_id}`);
    await setSession(next, true);
  } catch (err) {
    followed.delete(h.target_session_id);
    showError(err);
  }
}

function handedOff(h) {
  return `Handed off to ${h.target_engine_id}${h.reason ? ": " + h.reason : ""}.`;
}

function setActive(s) {
  const from = s.inbound_handoff ? ` · continued from ${s.inbound_handoff.source_engine_id}` : "";
  $("session").textContent = `Session ${s.session_id} · ${s.engine_id} · ${s.status}${from}`;
  $("session").dataset.status = s.status;
  const active = s.status === "active";
  $("message").disabled = !active;
  $("sendbtn").disabled = !active;
  if (active) return;
  const h = s.outbound_handoff;
  if (h && h.target_started) {
    follow(h);
  } else if (h) {
    addLine("system", `This session handed off to ${h.target_engine_id}; waiting for the new session to start…`);
  } else {
    addLine("system", `This session is ${s.status}: start a new one to go on.`);
  }
}

function renderTasks(bt) {
  tasks = new Map(((bt && bt.tasks) || []).map((t) => [t.task_id, t]));
  renderSidebar(...sidebarShown);
}

async function refreshTasks(sid) {
  try {
    const bt = await api("GET", `/v1/sessions/${sid}/tasks`);
    if (session && session.session_id === sid) renderTasks(bt);
  } catch (err) { /* the sidebar shows the tasks too */ }
}

// setSession makes s the page's session. With history, the turns it has
// already are shown first: the stream opens before they are read, and its
// replies wait for them, so a turn answered meanwhile is shown once.
async function setSession(s, withHistory) {
  session = s;
  lines = new Map();
  shown = new Set();
  held = [];
  inflight = 0;
  loading = withHistory;
  window.history.replaceState(null, "", "?session=" + encodeURIComponent(s.session_id));
  $("session").dataset.sessionId = s.session_id;
  $("session").dataset.engine = s.engine_id;
  $("engine").value = s.engine_id;
  tasks = new Map();
  renderSidebar(s.sidebar, s.phase);
  renderTasks(s.background_tasks);
  if (s.inbound_handoff) {
    addLine("system", `Now with ${s.engine_id}, which starts from what ${s.inbound_handoff.source_engine_id} handed over.`);
  }
  if (stream) stream.close();
  stream = new EventSource(`/v1/sessions/${s.session_id}/stream`);
  const opened = new Promise((resolve) => {
    stream.addEventListener("state", resolve, { once: true });
    stream.addEventListener("error", resolve, { once: true });
  });
  // The state comes first, and again after a reconnect.
  stream.addEventListener("state", (e) => {
    const st = JSON.parse(e.data);
    // Reconnected after an error of the stream: it is over.
    if (streamError && $("error").textContent === streamError) showError(null);
    streamError = null;
    if (!loading) renderSidebar(st.sidebar, st.phase);
    if (!loading && st.outbound_handoff && st.outbound_handoff.target_started) follow(st.outbound_handoff);
  });
  stream.addEventListener("turn", (e) => showReply(JSON.parse(e.data)));
  // A background task's outcome was merged: the sidebar changed with it.
  stream.addEventListener("task", (e) => {
    const t = JSON.parse(e.data);
    if (!session || session.session_id !== t.session_id) return;
    if (t.sidebar) renderSidebar(t.sidebar);
    refreshTasks(t.session_id);
  });
  // The handoff's target session has started: go on there, once the
  // turns of this one are shown (a stream opened on a session that has
  // handed off sends its handoff at once, before they are read).
  let heldHandoff = null;
  stream.addEventListener("handoff", (e) => {
    const h = JSON.parse(e.data);
    if (loading && session === s) heldHandoff = h;
    else follow(h);
  });
  stream.addEventListener("error", streamFailed);
  if (withHistory) {
    await opened;
    try {
      const { turns } = await api("GET", `/v1/sessions/${s.session_id}/turns`);
      if (session !== s) return;
      for (const t of turns) drawTurn(t);
    } catch (err) { showError(err); }
    if (session !== s) return;
    loading = false;
    placeHeld();
  }
  setActive(s);
  if (heldHandoff) follow(heldHandoff);
}

// streamFailed handles a stream's "error" events. One the server sent (a
// MessageEvent, with data) ends the stream and says why: it is shown; for
// an authentication error (the token was revoked or expired) the stream is
// closed, since reconnecting with the same token cannot succeed. Any other
// error, and one of the connection (no data: the server went away), leaves
// the browser to reconnect, as it does by itself; the next "state" clears
// what was shown.
function streamFailed(e) {
  const es = e.currentTarget;
  if (es !== stream || e.data === undefined) return;
  let body = {};
  try { body = JSON.parse(e.data) || {}; } catch (err) { /* not JSON: said below */ }
  const msg = body.error || `the server ended the stream of replies (${e.data})`;
  if (body.code === "unauthenticated") {
    es.close();
    showError(msg);
  } else {
    showError(`${msg} (reconnecting…)`);
  }
  streamError = $("error").textContent;
}

// showEarlier shows the conversation of the sessions that handed off to s,
// as the page showed it live: their turns, then the handoff.
async function showEarlier(s, depth) {
  const h = s.inbound_handoff;
  if (!h || !h.source_session_id || depth === 0) return;
  const src = await api("GET", `/v1/sessions/${h.source_session_id}`);
  await showEarlier(src, depth - 1);
  const { turns } = await api("GET", `/v1/sessions/${src.session_id}/turns`);
  for (const t of turns) drawTurn(t);
  followed.add(s.session_id);
  addLine("system", handedOff({ target_engine_id: s.engine_id, reason: h.reason }) + " Your next message goes there.");
}

// restore picks up the session of the address, after a reload or in
// another tab.
async function restore(id) {
  let s;
  try {
    s = await api("GET", `/v1/sessions/${encodeURIComponent(id)}`);
  } catch (err) {
    window.history.replaceState(null, "", window.location.pathname);
    showError(err.status === 404
      ? `There is no session ${id} here (unknown, or another tenant's): choose an engine and start a new one.`
      : err);
    return;
  }
  try {
    await showEarlier(s, 10);
  } catch (err) { /* the earlier sessions are context only */ }
  await setSession(s, true);
}

async function start(e) {
  e.preventDefault();
  showError(null);
  try {
    const s = await api("POST", "/v1/sessions", { engine_id: $("engine").value, project_id: $("project").value.trim() });
    $("log").replaceChildren();
    await setSession(s, false);
    addLine("system", `Started ${s.engine_id}. Say what you have in mind.`);
    $("message").focus();
  } catch (err) { showError(err); }
}

function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return Date.now().toString(36) + Math.random().toString(36).slice(2);
}

async function send(e) {
  e.preventDefault();
  showError(null);
  const text = $("message").value.trim();
  if (!text || !session) return;
  const sid = session.session_id;
  const key = unsent && unsent.sid === sid && unsent.text === text ? unsent.key : newKey();
  unsent = null;
  $("message").value = "";
  const asked = addLine("user", text);
  asked.dataset.waiting = "1";
  const line = addLine("pending", "…");
  inflight++;
  let t;
  try {
    t = await api("POST", `/v1/sessions/${sid}/turns?wait=30s`, { message: text }, { "Idempotency-Key": key });
  } catch (err) {
    if (!session || session.session_id !== sid) return;
    inflight--;
    // Refused: take the message back so nothing typed is lost.
    line.remove();
    asked.remove();
    if (!$("message").value) $("message").value = text;
    if (err instanceof Unreachable) {
      unsent = { sid, text, key };
      showError(`${err.message} Your message is kept in the box: send it again once the server is back.`);
    } else {
      showError(err);
    }
    placeHeld();
    return;
  }
  // Another session started meanwhile: this reply belongs to the old one.
  if (!session || session.session_id !== sid) return;
  inflight--;
  if (lines.has(t.turn_id)) {
    // The turn is on the page already (a first try whose answer was lost).
    line.remove();
    asked.remove();
  } else {
    asked.dataset.turn = t.turn_id;
    lines.set(t.turn_id, { asked, reply: line });
    if (t.status === "answered") {
      showReply(t);
    } else {
      line.textContent = "(still thinking — the reply will appear here)";
    }
  }
  placeHeld();
  try {
    const s = await api("GET", `/v1/sessions/${sid}`);
    if (session.session_id !== sid) return;
    renderTasks(s.background_tasks);
    const r = s.handoff_rejection;
    if (r && t.turn_number && r.at_turn === t.turn_number) {
      addLine("system", `Could not hand off to ${r.target_engine}: ${r.errors.join("; ")}. The conversation goes on here.`);
    }
    if (s.status !== "active") setActive(s);
  } catch (err) { showError(err); }
}

async function init() {
  $("start").addEventListener("submit", start);
  $("send").addEventListener("submit", send);
  $("message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("send").requestSubmit(); }
  });
  try {
    const info = await api("GET", "/v1/info");
    $("provider").textContent = "LLM: " + info.llm_provider;
    $("offline").hidden = !info.offline;
    const { engines } = await api("GET", "/v1/engines");
    for (const en of engines) {
      const o = document.createElement("option");
      o.value = en.engine_id;
      o.textContent = en.name;
      o.title = en.description;
      $("engine").appendChild(o);
    }
    $("start-button").disabled = engines.length === 0;
  } catch (err) {
    showError(err);
    return;
  }
  const id = new URLSearchParams(window.location.search).get("session");
  if (id) await restore(id);
}
init();
