// The Praetor page: start a session with an engine, chat, and watch the
// sidebar (phase, progress, obligations) update with every reply.
"use strict";
const $ = (id) => document.getElementById(id);
let session = null;
let stream = null;

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

function showError(err) {
  $("error").textContent = err ? String(err.message || err) : "";
  $("error").hidden = !err;
}

function addLine(kind, text) {
  const li = document.createElement("li");
  li.className = kind;
  li.textContent = text;
  li.dataset.testid = kind === "engine" ? "reply" : kind;
  $("log").appendChild(li);
  li.scrollIntoView({ block: "end" });
  return li;
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

function setSession(s) {
  session = s;
  $("session").textContent = `Session ${s.session_id} · ${s.engine_id} · ${s.status}`;
  $("session").dataset.sessionId = s.session_id;
  $("session").dataset.engine = s.engine_id;
  const active = s.status === "active";
  $("message").disabled = !active;
  $("sendbtn").disabled = !active;
  renderSidebar(s.sidebar, s.phase);
  if (stream) stream.close();
  stream = new EventSource(`/v1/sessions/${s.session_id}/stream`);
  stream.addEventListener("turn", (e) => {
    const t = JSON.parse(e.data);
    renderSidebar(t.sidebar, t.phase);
  });
  stream.addEventListener("handoff", async (e) => {
    const h = JSON.parse(e.data);
    addLine("system", `Handing off to ${h.target_engine_id}: ${h.reason || ""}`);
    const next = await api("GET", `/v1/sessions/${h.target_session_id}`);
    setSession(next);
  });
}

async function start(e) {
  e.preventDefault();
  showError(null);
  try {
    const s = await api("POST", "/v1/sessions", { engine_id: $("engine").value, project_id: $("project").value });
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
  addLine("user", text);
  const pending = addLine("engine pending", "…");
  try {
    const t = await api("POST", `/v1/sessions/${session.session_id}/turns?wait=30s`, { message: text });
    if (t.status !== "answered") {
      pending.textContent = "(still thinking — the reply will appear here)";
      return;
    }
    pending.className = "engine";
    pending.textContent = t.reply;
    renderSidebar(t.sidebar, t.phase);
    const s = await api("GET", `/v1/sessions/${session.session_id}`);
    if (s.status !== "active" && s.handoffs && s.handoffs.outbound) {
      session = s;
      $("session").textContent = `Session ${s.session_id} · ${s.engine_id} · ${s.status}`;
    }
  } catch (err) {
    pending.remove();
    showError(err);
  }
}

async function init() {
  try {
    const info = await api("GET", "/v1/info");
    $("provider").textContent = "LLM: " + info.llm_provider;
    $("offline").hidden = !info.offline;
    const { engines } = await api("GET", "/v1/engines");
    for (const en of engines) {
      const o = document.createElement("option");
      o.value = en.engine_id;
      o.textContent = en.name;
      $("engine").appendChild(o);
    }
  } catch (err) { showError(err); }
  $("start").addEventListener("submit", start);
  $("send").addEventListener("submit", send);
  $("message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("send").requestSubmit(); }
  });
}
init();
