// The Praetor page: start a session with an engine, chat, and watch the
// sidebar (phase, progress, obligations, background research) update with
// every reply. When the engine hands the conversation to another engine,
// the page follows it: the next message goes to the new session.
"use strict";
const $ = (id) => document.getElementById(id);
let session = null;
let stream = null;
// Reply lines waiting for their reply, in the order the turns were posted:
// a session's turns are answered in that order, so the next reply fills the
// first line, whether it comes with the POST or on the stream.
let waiting = [];
// Turns whose reply is on the page (it may come both ways).
let shown = new Set();

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json().catch(() => ({}));
  if (res.status === 401) {
    throw new Error(`${data.error || "unauthorized"} — without a token the page works only from the machine running praetor dev (http://127.0.0.1:…)`);
  }
  if (!res.ok) throw new Error(data.error || `${res.status} ${res.statusText}`);
  return data;
}

function showError(err) {
  $("error").textContent = err ? String(err.message || err) : "";
  $("error").hidden = !err;
}

// addLine appends a line to the chat; kind is its class and test id (user,
// reply, pending, system).
function addLine(kind, text) {
  const li = document.createElement("li");
  li.className = kind === "pending" ? "reply pending" : kind;
  li.textContent = text;
  li.dataset.testid = kind;
  $("log").appendChild(li);
  li.scrollIntoView({ block: "end" });
  return li;
}

// showReply puts a turn's reply on the page once.
function showReply(t) {
  if (shown.has(t.turn_id)) return;
  shown.add(t.turn_id);
  const li = waiting.shift() || addLine("reply", "");
  li.className = t.degraded ? "reply degraded" : "reply";
  li.dataset.testid = "reply";
  li.dataset.turn = t.turn_id;
  li.textContent = t.reply;
  li.scrollIntoView({ block: "end" });
  renderSidebar(t.sidebar, t.phase);
}

function renderSidebar(sb, phase) {
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
      ul.appendChild(li);
    }
    div.appendChild(ul);
    box.appendChild(div);
  }
}

// Sessions the page has switched to after a handoff, so a handoff is
// followed once whichever way the page learns of it.
const followed = new Set();

// follow switches to the session a handoff started: the conversation goes
// on there, the chat so far stays on the page.
async function follow(h) {
  if (!h || !h.target_session_id || followed.has(h.target_session_id)) return;
  followed.add(h.target_session_id);
  addLine("system", `Handed off to ${h.target_engine_id}${h.reason ? ": " + h.reason : ""}. Your next message goes there.`);
  try {
    const next = await api("GET", `/v1/sessions/${h.target_session_id}`);
    setSession(next);
  } catch (err) {
    followed.delete(h.target_session_id);
    showError(err);
  }
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

// renderTasks lists the session's background research and its status.
function renderTasks(bt) {
  const box = $("tasks");
  box.replaceChildren();
  const list = (bt && bt.tasks) || [];
  box.hidden = list.length === 0;
  if (list.length === 0) return;
  const h = document.createElement("h3");
  h.textContent = "Background research";
  box.appendChild(h);
  const ul = document.createElement("ul");
  for (const t of list) {
    const li = document.createElement("li");
    li.dataset.testid = "task";
    li.dataset.task = t.task_id;
    li.dataset.status = t.status;
    const label = document.createElement("span");
    label.textContent = t.display_name;
    label.title = t.note || t.error || "";
    const st = document.createElement("span");
    st.className = "status " + t.status;
    st.textContent = t.status === "stalled" ? "waiting" : t.status;
    li.append(label, st);
    ul.appendChild(li);
  }
  box.appendChild(ul);
}

async function refreshTasks(sid) {
  try {
    const bt = await api("GET", `/v1/sessions/${sid}/tasks`);
    if (session && session.session_id === sid) renderTasks(bt);
  } catch (err) { /* the sidebar shows the tasks too */ }
}

function setSession(s) {
  session = s;
  waiting = [];
  shown = new Set();
  $("session").dataset.sessionId = s.session_id;
  $("session").dataset.engine = s.engine_id;
  setActive(s);
  renderSidebar(s.sidebar, s.phase);
  renderTasks(s.background_tasks);
  if (s.inbound_handoff) {
    addLine("system", `Now with ${s.engine_id}, which starts from what ${s.inbound_handoff.source_engine_id} handed over.`);
  }
  if (stream) stream.close();
  stream = new EventSource(`/v1/sessions/${s.session_id}/stream`);
  // The state comes first, and again after a reconnect.
  stream.addEventListener("state", (e) => {
    const st = JSON.parse(e.data);
    renderSidebar(st.sidebar, st.phase);
    if (st.outbound_handoff && st.outbound_handoff.target_started) follow(st.outbound_handoff);
  });
  stream.addEventListener("turn", (e) => showReply(JSON.parse(e.data)));
  // A background task's outcome was merged: the sidebar changed with it.
  stream.addEventListener("task", (e) => {
    const t = JSON.parse(e.data);
    if (!session || session.session_id !== t.session_id) return;
    if (t.sidebar) renderSidebar(t.sidebar);
    refreshTasks(t.session_id);
  });
  // The handoff's target session has started: go on there.
  stream.addEventListener("handoff", (e) => follow(JSON.parse(e.data)));
}

async function start(e) {
  e.preventDefault();
  showError(null);
  try {
    const s = await api("POST", "/v1/sessions", { engine_id: $("engine").value, project_id: $("project").value.trim() });
    $("log").replaceChildren();
    setSession(s);
    addLine("system", `Started ${s.engine_id}. Say what you have in mind.`);
    $("message").focus();
  } catch (err) { showError(err); }
}

async function send(e) {
  e.preventDefault();
  const text = $("message").value.trim();
  if (!text || !session) return;
  showError(null);
  $("message").value = "";
  const asked = addLine("user", text);
  const line = addLine("pending", "…");
  waiting.push(line);
  const sid = session.session_id;
  let t;
  try {
    t = await api("POST", `/v1/sessions/${sid}/turns?wait=30s`, { message: text });
  } catch (err) {
    if (!session || session.session_id !== sid) return;
    // Refused: take the message back so nothing typed is lost.
    waiting = waiting.filter((l) => l !== line);
    line.remove();
    asked.remove();
    if (!$("message").value) $("message").value = text;
    showError(err);
    return;
  }
  // Another session started meanwhile: this reply belongs to the old one.
  if (!session || session.session_id !== sid) return;
  if (t.status === "answered") {
    showReply(t);
  } else if (waiting.includes(line)) {
    line.textContent = "(still thinking — the reply will appear here)";
  }
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
  } catch (err) { showError(err); }
}
init();
