// One session's page: its facts, the live terminal (terminal.js) or a loop's running iteration, the
// journal, typing to the agent and Stop.

import {
  $, app, call, clearError, debounce, el, focusHeading, isLive, localTime, notice, refresh, refreshSoon, show, stateClass,
} from "./core.js";
import { loadReplay, stopReplay } from "./replay.js";
import { closeTerminal, openTerminal, terminalSession } from "./terminal.js";

// The core says what each event means (the same words `nightshift journal` prints).
function describe(ev) {
  if (ev.text) return ev.text;
  const { ts, session, event, ...rest } = ev;
  return `${event} ${JSON.stringify(rest)}`;
}

export function renderFacts() {
  const s = app.sessions.find((x) => x.id === app.openId);
  if (!s) return;
  $("detail-title").textContent = s.id;
  const badge = $("detail-state");
  badge.className = `badge ${stateClass(s)}`;
  badge.textContent = s.shown_state;
  badge.dataset.state = s.shown_state;
  // What the page may ask of it is the core's to say (`actions`); a stop before the start is a cancel.
  const scheduled = s.standing === "scheduled";
  $("stop-session").disabled = !s.actions.stop;
  $("stop-session").textContent = scheduled ? "Cancel" : "Stop";
  $("resume-session").hidden = !s.actions.resume;
  $("send-submit").disabled = !s.actions.send;
  $("send-text").disabled = !s.actions.send;
  // A loop takes no typing and has no respawn options; its screen is what its iteration says.
  const loop = s.kind === "loop";
  // Typing goes to a running agent only: an ended or lost one's page offers Resume instead.
  $("send-form").hidden = loop || !s.actions.send;
  $("send-hint").hidden = loop || !s.actions.send;
  $("open-options").hidden = loop;
  $("iterations").hidden = !loop;
  $("screen-heading").textContent = loop ? "The running iteration" : "Terminal";
  $("terminal-bar").hidden = loop;
  const facts = [["Kind", loop ? "loop (a fresh headless session per task)" : "terminal"],
    ["Command", s.command_line], ["Agent", s.agent], ["Directory", s.cwd],
    [s.standing === "scheduled" ? "Scheduled" : "Started", localTime(s.created)], ["Ended", s.ended ? localTime(s.ended) : "—"],
    [isLive(s) || s.standing === "scheduled" ? "Now" : "How it ended", s.how || "—"]];
  if (s.error) facts.push(["Error", s.error]);
  $("detail-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  if (!isLive(s)) return;
  if (loop) startScreen();
  else if (terminalSession() !== s.id) {
    // A scheduled one that has just started: its terminal replaces the note.
    $("screen-note").hidden = true;
    openTerminal(s.id);
  }
}

async function loadEvents() {
  const id = app.openId;
  const got = await call("session_events", { id });
  if (!got.ok || id !== app.openId) return;
  const events = got.value;
  const list = $("detail-events");
  const atBottom = list.lastElementChild === null;
  list.replaceChildren(...events.map((ev) =>
    el("li", { "data-event": ev.event, "data-action": ev.action },
      el("time", { dateTime: ev.ts, title: localTime(ev.ts) }, new Date(ev.ts).toLocaleTimeString()), " ", describe(ev))));
  if (atBottom) list.scrollTop = list.scrollHeight;
  renderIterations(events);
}

// A loop's iterations, one row each (a retried one shows its last attempt), newest last.
function renderIterations(events) {
  const ended = events.filter((ev) => ev.event === "iteration_ended" && !ev.probe);
  const money = (c) => (c === undefined || c === null ? "unknown" : c < 0.1 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`);
  const rows = ended.map((ev) => el("tr", { "data-iteration": ev.iteration, "data-outcome": ev.outcome },
    el("td", {}, `${ev.iteration}${ev.attempt > 1 ? ` (try ${ev.attempt})` : ""}`),
    el("td", {}, ev.task || "—"),
    el("td", { title: ev.detail || "" }, ev.outcome),
    el("td", {}, money(ev.cost_usd)),
    el("td", {}, ev.tokens === undefined ? "—" : String(ev.tokens)),
    el("td", {}, ev.project)));
  $("iterations-table").tBodies[0].replaceChildren(...rows);
}
export const loadEventsSoon = debounce(loadEvents, 150);

// What the agent wrote for its next self before its context was reset (kept by Nightshift in its
// state directory, never in the repository).
export async function loadHandoff() {
  const id = app.openId;
  const got = await call("session_handoff", { id });
  if (!got.ok || id !== app.openId) return;
  const handoff = got.value;
  $("handoff").hidden = !handoff;
  if (!handoff) return;
  $("handoff-meta").textContent = `Written ${localTime(handoff.written)} · kept in ${handoff.path}`;
  $("handoff-text").textContent = handoff.text;
}

// `at`: a journal time to open its replay at (a mark clicked on a timeline).
export async function openSession(id, at = null) {
  clearError();
  if (!app.sessions.some((s) => s.id === id)) await refresh();
  app.openId = id;
  app.options = null;
  closeTerminal();
  stopScreen();
  $("screen").replaceChildren();
  $("screen").hidden = true;
  $("screen-note").hidden = true;
  $("detail-events").replaceChildren();
  $("handoff").hidden = true;
  $("lives").hidden = true;
  $("replay").hidden = true;
  $("replay-open").hidden = true;
  stopReplay();
  show("detail");
  renderFacts();
  focusHeading("detail-view");
  const s = app.sessions.find((x) => x.id === id);
  const loop = s && s.kind === "loop";
  if (s && !isLive(s) && !loop) {
    $("screen-note").textContent = s.standing === "scheduled"
      ? `It has not started yet (it ${s.reason || "starts later"}); its terminal appears here when it does.`
      : s.actions.resume
        ? "The agent is not running, so there is no terminal. Resume carries its conversation on; what each life showed is below."
        : "The agent is not running, so there is no terminal to show. Its journal is below.";
    $("screen-note").hidden = false;
  }
  await Promise.all([loadEvents(), loop ? loadScreen() : null, loadHandoff(), loadLives(),
    loop ? null : loadReplay(id, null, at)]);
  $("replay-open").hidden = $("replay").hidden;
  if (at && !$("replay").hidden) $("replay").scrollIntoView({ block: "start" });
}

// The session's recorded lives: what each one's screen showed, scrolled.
export async function loadLives(pick) {
  const id = app.openId;
  const got = await call("session_lives", { id, life: pick ?? null }, { quietCodes: ["no_recording"] });
  if (!got.ok || app.openId !== id || !got.value.lives.length) return;
  const { lives, life, file, text } = got.value;
  const select = $("life-pick");
  select.replaceChildren(...lives.map((n) => el("option", { value: String(n) }, `life ${n}`)));
  select.value = String(life);
  $("life-meta").textContent = `Life ${life} of ${lives.length}: every line the screen showed, the last screen at the end. Kept in ${file}.`;
  $("life-text").textContent = text;
  $("lives").hidden = false;
}

export function closeSession() {
  app.openId = null;
  closeTerminal();
  show("list");
  const row = document.querySelector("#sessions tbody tr");
  if (row) row.focus();
}

// A loop's running iteration has no terminal: its screen is asked for about once a second while its
// page is open.
let screenTimer = null;

function startScreen() {
  if (screenTimer || app.view !== "detail") return;
  screenTimer = setInterval(() => { if (!document.hidden) loadScreen(); }, 1000);
}

export function stopScreen() {
  clearInterval(screenTimer);
  screenTimer = null;
}

async function loadScreen() {
  const id = app.openId;
  if (!id) return;
  const got = await call("session_screen", { id }, { quietCodes: ["not_running"] });
  if (id !== app.openId || (!got.ok && got.error.code !== "not_running")) { stopScreen(); return; }
  if (!got.ok) {
    stopScreen();
    $("screen").hidden = true;
    $("screen-note").textContent = "No iteration is running, so there is no screen to show. Its journal is below.";
    $("screen-note").hidden = false;
    return;
  }
  renderScreen(got.value);
}

function renderScreen(screen) {
  const rows = (screen.rows || []).map((r) => r.replace(/\s+$/, ""));
  const [cr, cc] = screen.cursor || [-1, -1];
  while (rows.length > 1 && rows[rows.length - 1] === "" && rows.length - 1 > cr) rows.pop();
  const pre = $("screen");
  const parts = [];
  rows.forEach((row, i) => {
    if (i > 0) parts.push("\n");
    if (screen.cursor_visible && i === cr) {
      const padded = row.padEnd(cc + 1, " ");
      parts.push(padded.slice(0, cc), el("span", { class: "cursor" }, padded[cc]), padded.slice(cc + 1));
    } else {
      parts.push(row);
    }
  });
  // Follow the bottom of the screen (where the agent works), unless the user scrolled up to read.
  const follow = pre.hidden || pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.replaceChildren(...parts);
  pre.hidden = false;
  if (follow) pre.scrollTop = pre.scrollHeight;
  if (screen.title) pre.setAttribute("aria-label", `Screen: ${screen.title}`);
  $("screen-note").hidden = true;
}

export async function stopOpen() {
  const id = app.openId;
  clearError();
  const s = app.sessions.find((x) => x.id === id);
  if (!(await call("stop_session", { id })).ok) return;
  notice(s && s.standing === "scheduled" ? `Session ${id} is cancelled: it will not start.`
    : `Stopping session ${id}. Nightshift will not restart it.`);
  refreshSoon();
}

export async function resumeOpen() {
  const id = app.openId;
  clearError();
  const got = await call("resume_session", { id });
  if (!got.ok) return;
  notice(got.value === id ? `Session ${id} runs again, on its own conversation.`
    : `Session ${id}'s conversation goes on in session ${got.value}.`);
  refreshSoon();
  if (got.value !== id) await openSession(got.value);
}

export async function sendText(ev) {
  ev.preventDefault();
  const text = $("send-text").value;
  if (!text.trim()) { $("send-text").focus(); return; }
  clearError();
  if (!(await call("send_text", { id: app.openId, text })).ok) return;
  $("send-text").value = "";
  loadEventsSoon();
}
