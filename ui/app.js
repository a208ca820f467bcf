// Nightshift's window: the sessions in the journal, live, and one session's journal.
// Everything the core says arrives through `invoke` (commands) and the `journal` event.
"use strict";

const { invoke } = window.__TAURI__.core;
const { listen } = window.__TAURI__.event;

const $ = (id) => document.getElementById(id);
let sessions = [];
let openId = null;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c);
  return node;
}

function localTime(ts) {
  const d = new Date(ts);
  return isNaN(d) ? ts : d.toLocaleString();
}

function ago(ts) {
  const s = Math.round((Date.now() - new Date(ts).getTime()) / 1000);
  if (!(s >= 0)) return localTime(ts);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return localTime(ts);
}

// The colour family of a shown state ("exited (3)" → exited-bad).
function stateClass(s) {
  const shown = s.shown_state;
  if (shown.startsWith("exited")) return s.exit_code === 0 ? "state-done" : "state-bad";
  return `state-${shown.split(" ")[0]}`;
}

function showError(e) {
  // Every core error has one shape: { code, message }.
  const err = typeof e === "object" && e !== null ? e : { code: "error", message: String(e) };
  $("error-code").textContent = err.code || "error";
  $("error-message").textContent = err.message || String(e);
  $("error").hidden = false;
}

function renderList() {
  const body = $("sessions").querySelector("tbody");
  body.replaceChildren();
  for (const s of sessions) {
    const row = el("tr", { "data-session-id": s.id, tabIndex: 0, title: s.command_line },
      el("td", { class: "id" }, s.id),
      el("td", {}, el("span", { class: `badge ${stateClass(s)}`, "data-state": s.shown_state }, s.shown_state)),
      el("td", { class: "wide" }, s.agent),
      el("td", { class: "cwd", title: s.cwd }, s.cwd),
      el("td", { class: "wide", title: localTime(s.created) }, ago(s.created)),
      el("td", { class: "wide", title: localTime(s.last_event_at) }, `${s.last_event} · ${ago(s.last_event_at)}`),
    );
    row.addEventListener("click", () => openSession(s.id));
    row.addEventListener("keydown", (ev) => { if (ev.key === "Enter") openSession(s.id); });
    body.append(row);
  }
  $("empty").hidden = sessions.length > 0;
  $("sessions").hidden = sessions.length === 0;
  const live = sessions.filter((s) => !["exited", "failed", "lost"].includes(s.shown_state.split(" ")[0])).length;
  $("counts").textContent = sessions.length ? `${live} running · ${sessions.length} in the journal` : "";
}

function describe(ev) {
  switch (ev.event) {
    case "state": return `${ev.state} — ${ev.reason}`;
    case "input": return `typed ${ev.chars} characters${ev.enter ? " + Enter" : ""} (${ev.source})`;
    case "stop_requested": return `stop requested (${ev.source})`;
    case "respawn_step": return `respawn cycle ${ev.cycle}: ${ev.step} ${ev.outcome}`;
    case "respawn": return `respawn ${ev.action.replace("_", " ")}${ev.cycle ? ` (cycle ${ev.cycle})` : ""}${ev.reason ? ` — ${ev.reason}` : ""}`;
    case "breaker": return `${ev.breaker.replace("_", "-")} breaker ${ev.state.replace("_", "-")}: ${ev.reason}`;
    case "limit_detected": return `usage limit (${ev.source})${ev.resets_at ? `, resets ${localTime(ev.resets_at)}` : ""}: ${ev.line}`;
    case "limit_cleared": return `usage limit over: ${ev.reason}`;
    case "resume_sent": return `resume sent (attempt ${ev.attempt})`;
    case "limit_failed": return `resume failed: ${ev.reason}`;
    case "window_guard": return `fresh-window guard: ${ev.reason}`;
    case "usage": return `usage: 5h ${ev.five_hour_pct ?? "–"}% · 7d ${ev.seven_day_pct ?? "–"}%`;
    default: {
      const { ts, session, event, ...rest } = ev;
      return `${event} ${JSON.stringify(rest)}`;
    }
  }
}

async function renderDetail() {
  const s = sessions.find((x) => x.id === openId);
  if (!s) return;
  $("detail-title").textContent = `${s.id} · ${s.shown_state}`;
  const facts = [["Command", s.command_line], ["Agent", s.agent], ["Directory", s.cwd],
    ["Started", localTime(s.created)], ["Ended", s.ended ? localTime(s.ended) : "—"], ["Reason", s.reason || "—"]];
  $("detail-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  try {
    const events = await invoke("session_events", { id: s.id });
    $("detail-events").replaceChildren(...events.map((ev) =>
      el("li", { "data-event": ev.event }, el("time", { title: ev.ts }, new Date(ev.ts).toLocaleTimeString()), " ", describe(ev))));
  } catch (e) {
    showError(e);
  }
}

function openSession(id) {
  openId = id;
  $("list-view").hidden = true;
  $("detail-view").hidden = false;
  renderDetail();
}

function closeSession() {
  openId = null;
  $("detail-view").hidden = true;
  $("list-view").hidden = false;
}

async function refresh() {
  try {
    sessions = await invoke("list_sessions");
    renderList();
    if (openId) await renderDetail();
  } catch (e) {
    showError(e);
  }
}

$("back").addEventListener("click", closeSession);
$("error-close").addEventListener("click", () => { $("error").hidden = true; });
listen("journal", () => refresh());
// A session whose supervisor died becomes `lost` without an event of its own; look again now and then.
setInterval(refresh, 5000);
refresh();
