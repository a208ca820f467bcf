// The sessions list: every session in the journal with its state, and Pause all / Resume all.

import { $, ago, app, call, clearError, el, isLive, localTime, notice, plural, refreshSoon, stateClass } from "./core.js";
import { openSession, renderFacts } from "./session.js";
import { loadWorktrees } from "./worktrees.js";

function renderList() {
  const body = $("sessions").querySelector("tbody");
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.sessionId : undefined;
  body.replaceChildren();
  for (const s of app.sessions) {
    const row = el("tr", { "data-session-id": s.id, "data-state": s.shown_state, "data-kind": s.kind, tabIndex: 0,
      title: s.command_line },
      el("td", { class: "id" }, s.id),
      el("td", {}, el("span", { class: `badge ${stateClass(s)}`, "data-state": s.shown_state }, s.shown_state)),
      el("td", { class: "wide" }, s.kind === "loop" ? `${s.agent} loop` : s.agent),
      el("td", { class: "cwd", title: s.cwd }, s.cwd),
      el("td", { class: "wide", title: localTime(s.created) }, ago(s.created)),
      el("td", { class: "wide", title: localTime(s.last_event_at) }, `${s.last_event} · ${ago(s.last_event_at)}`),
    );
    row.addEventListener("click", () => openSession(s.id));
    row.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); openSession(s.id); }
    });
    body.append(row);
    if (focused === s.id) row.focus();
  }
  $("empty").hidden = app.sessions.length > 0;
  $("sessions").hidden = app.sessions.length === 0;
  const live = app.sessions.filter(isLive).length;
  $("counts").textContent = app.sessions.length ? `${live} running · ${app.sessions.length} in the journal` : "";
}

export async function loadList() {
  const got = await call("list_sessions");
  if (!got.ok) return;
  app.sessions = got.value;
  renderList();
  if (app.view === "detail" && app.openId) renderFacts();
  if (app.view === "list") loadWorktrees();
}

export async function pauseAll() {
  clearError();
  const got = await call("pause_all");
  if (!got.ok) return;
  const n = got.value;
  notice(n ? `Held ${plural(n, "session", "sessions")}: no cycle, restart or resume starts until you resume them.` : "No session to hold.");
  refreshSoon();
}

export async function resumeAll() {
  clearError();
  const got = await call("resume_all");
  if (!got.ok) return;
  const n = got.value;
  notice(n ? `Released ${plural(n, "session", "sessions")}.` : "No session was held.");
  refreshSoon();
}
