// Nightshift's window: the sessions in the journal, live; one session's screen, journal and options;
// new sessions; the usage chip; the away digest, the morning run summary and the app's settings.
// Everything the core says arrives through `invoke` (commands) and events (`listen`). Every command
// error has one shape, { code, message }, and is shown in the #error banner.
"use strict";

const { invoke } = window.__TAURI__.core;
const { listen } = window.__TAURI__.event;

const $ = (id) => document.getElementById(id);
const FAILED = Symbol("failed");
const SOURCE = "the app";
const ENDED = ["exited", "failed", "lost"];

let sessions = [];
let view = "list";
let openId = null;          // the session whose page (or options) is open
let presets = [];           // [{name, title, description, source, settings}]
let options = null;         // the open session's Options
let formDirty = false;      // the respawn form has edits not yet applied
let screenTimer = null;

// ---------------------------------------------------------------- helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("data-") || k.startsWith("aria-") || k === "role") node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function localTime(ts) {
  const d = new Date(ts);
  return isNaN(d) ? String(ts) : d.toLocaleString();
}

function clock(ts) {
  const d = new Date(ts);
  if (isNaN(d)) return String(ts);
  const sameDay = d.toDateString() === new Date().toDateString();
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return sameDay ? time : `${d.toLocaleDateString([], { weekday: "short" })} ${time}`;
}

function ago(ts) {
  const s = Math.round((Date.now() - new Date(ts).getTime()) / 1000);
  if (!(s >= 0)) return localTime(ts);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return localTime(ts);
}

function span(secs) {
  secs = Math.max(0, Math.round(secs));
  if (secs < 60) return `${secs} s`;
  const m = Math.round(secs / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function isLive(s) {
  return s && !ENDED.includes(s.shown_state.split(" ")[0]);
}

// The colour family of a shown state ("exited (3)" → state-bad).
function stateClass(s) {
  const shown = s.shown_state;
  if (shown.startsWith("exited")) return s.exit_code === 0 ? "state-done" : "state-bad";
  return `state-${shown.split(" ")[0]}`;
}

function errorOf(e) {
  if (e && typeof e === "object" && (e.code || e.message)) {
    return { code: e.code || "error", message: e.message || String(e.code) };
  }
  return { code: "error", message: String(e) };
}

function showError(e) {
  const err = errorOf(e);
  $("error-code").textContent = err.code;
  $("error-message").textContent = err.message;
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
}

let noticeTimer = null;
function notice(text, sticky = false) {
  $("notice-text").textContent = text;
  $("notice").hidden = false;
  clearTimeout(noticeTimer);
  if (!sticky) noticeTimer = setTimeout(() => { $("notice").hidden = true; }, 6000);
}

// Invokes a command; a failure is shown and returns FAILED, so callers never swallow it.
async function call(name, args, { quietCodes = [] } = {}) {
  try {
    return await invoke(name, args);
  } catch (e) {
    const err = errorOf(e);
    if (quietCodes.includes(err.code)) return { [FAILED]: err };
    showError(err);
    return FAILED;
  }
}

function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

// ---------------------------------------------------------------- views

const VIEWS = ["list", "new", "detail", "options", "digest", "morning", "settings"];

function show(name) {
  if (name !== view) $("notice").hidden = true;  // a notice is about the view it was shown in
  view = name;
  for (const v of VIEWS) $(`${v}-view`).hidden = v !== name;
  for (const b of document.querySelectorAll("nav [data-view]")) {
    const current = b.dataset.view === name || (b.dataset.view === "list" && (name === "detail" || name === "options"));
    if (current) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  if (name !== "detail") stopScreen();
  if (name === "list") refresh();
  if (name === "new") prepareNewForm();
  if (name === "digest") loadDigest();
  if (name === "morning") loadMorning();
  if (name === "settings") loadSettings();
}

function focusHeading(section) {
  const h = $(section).querySelector("h2");
  if (h) { h.tabIndex = -1; h.focus({ preventScroll: true }); }
}

// ---------------------------------------------------------------- sessions list

function renderList() {
  const body = $("sessions").querySelector("tbody");
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.sessionId : undefined;
  body.replaceChildren();
  for (const s of sessions) {
    const row = el("tr", { "data-session-id": s.id, "data-state": s.shown_state, tabIndex: 0, title: s.command_line },
      el("td", { class: "id" }, s.id),
      el("td", {}, el("span", { class: `badge ${stateClass(s)}`, "data-state": s.shown_state }, s.shown_state)),
      el("td", { class: "wide" }, s.agent),
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
  $("empty").hidden = sessions.length > 0;
  $("sessions").hidden = sessions.length === 0;
  const live = sessions.filter(isLive).length;
  $("counts").textContent = sessions.length ? `${live} running · ${sessions.length} in the journal` : "";
}

async function refresh() {
  const list = await call("list_sessions");
  if (list === FAILED) return;
  sessions = list;
  renderList();
  if (view === "detail" && openId) renderFacts();
}
const refreshSoon = debounce(refresh, 150);

// ---------------------------------------------------------------- one session

function describe(ev) {
  const words = (s) => String(s ?? "").replaceAll("_", " ");
  switch (ev.event) {
    case "state": return `${words(ev.state)} — ${ev.reason}`;
    case "input": return `typed ${ev.chars} characters${ev.enter ? " + Enter" : ""} (${ev.source})`;
    case "stop_requested": return `stop requested (${ev.source})`;
    case "respawn_step": return `respawn cycle ${ev.cycle}: ${ev.step} ${words(ev.outcome)}`;
    case "respawn": return `respawn ${words(ev.action)}${ev.cycle ? ` (cycle ${ev.cycle})` : ""}${ev.reason ? ` — ${ev.reason}` : ""}`;
    case "breaker": return `${words(ev.breaker).replace(" ", "-")} breaker ${words(ev.state).replace(" ", "-")}: ${ev.reason}`;
    case "limit_detected": return `usage limit (${ev.source})${ev.resets_at ? `, resets ${localTime(ev.resets_at)}` : ""}: ${ev.line}`;
    case "limit_cleared": return `usage limit over: ${ev.reason}`;
    case "resume_sent": return `resume sent (attempt ${ev.attempt})`;
    case "limit_failed": return `resume failed: ${ev.reason}`;
    case "window_guard": return `fresh-window guard: ${ev.reason}`;
    case "automation": return `${ev.what} (${ev.source})`;
    case "suspended": {
      const secs = (new Date(ev.to) - new Date(ev.from)) / 1000;
      return `the computer slept for ${span(secs)}, from ${clock(ev.from)} to ${clock(ev.to)}`;
    }
    case "usage": return `usage: 5h ${ev.five_hour_pct ?? "–"}% · 7d ${ev.seven_day_pct ?? "–"}%`;
    default: {
      const { ts, session, event, ...rest } = ev;
      return `${words(event)} ${JSON.stringify(rest)}`;
    }
  }
}

function renderFacts() {
  const s = sessions.find((x) => x.id === openId);
  if (!s) return;
  $("detail-title").textContent = s.id;
  const badge = $("detail-state");
  badge.className = `badge ${stateClass(s)}`;
  badge.textContent = s.shown_state;
  badge.dataset.state = s.shown_state;
  $("stop-session").disabled = !isLive(s);
  $("send-submit").disabled = !isLive(s);
  $("send-text").disabled = !isLive(s);
  const facts = [["Command", s.command_line], ["Agent", s.agent], ["Directory", s.cwd],
    ["Started", localTime(s.created)], ["Ended", s.ended ? localTime(s.ended) : "—"], ["Reason", s.reason || "—"]];
  if (s.error) facts.push(["Error", s.error]);
  $("detail-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  if (isLive(s)) startScreen();
}

async function loadEvents() {
  const id = openId;
  const events = await call("session_events", { id });
  if (events === FAILED || id !== openId) return;
  const list = $("detail-events");
  const atBottom = list.lastElementChild === null;
  list.replaceChildren(...events.map((ev) =>
    el("li", { "data-event": ev.event, "data-action": ev.action },
      el("time", { dateTime: ev.ts, title: localTime(ev.ts) }, new Date(ev.ts).toLocaleTimeString()), " ", describe(ev))));
  if (atBottom) list.scrollTop = list.scrollHeight;
}
const loadEventsSoon = debounce(loadEvents, 150);

async function openSession(id) {
  clearError();
  if (!sessions.some((s) => s.id === id)) await refresh();
  openId = id;
  options = null;
  $("screen").replaceChildren();
  $("screen").hidden = true;
  $("screen-note").hidden = true;
  $("detail-events").replaceChildren();
  show("detail");
  renderFacts();
  focusHeading("detail-view");
  await Promise.all([loadEvents(), loadScreen()]);
}

function closeSession() {
  openId = null;
  show("list");
  const row = document.querySelector("#sessions tbody tr");
  if (row) row.focus();
}

// The live screen: polled about once a second while the session's page is open.
function startScreen() {
  if (screenTimer || view !== "detail") return;
  screenTimer = setInterval(() => { if (!document.hidden) loadScreen(); }, 1000);
}

function stopScreen() {
  clearInterval(screenTimer);
  screenTimer = null;
}

async function loadScreen() {
  const id = openId;
  if (!id) return;
  const screen = await call("session_screen", { id }, { quietCodes: ["not_running"] });
  if (screen === FAILED || id !== openId) { stopScreen(); return; }
  if (screen[FAILED]) {
    stopScreen();
    $("screen").hidden = true;
    $("screen-note").textContent = "The agent is not running, so there is no screen to show. Its journal is below.";
    $("screen-note").hidden = false;
    return;
  }
  renderScreen(screen);
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

async function stopOpen() {
  const id = openId;
  clearError();
  if ((await call("stop_session", { id })) === FAILED) return;
  notice(`Stopping session ${id}. Nightshift will not restart it.`);
  refreshSoon();
}

async function sendText(ev) {
  ev.preventDefault();
  const text = $("send-text").value;
  if (!text.trim()) { $("send-text").focus(); return; }
  clearError();
  if ((await call("send_text", { id: openId, text })) === FAILED) return;
  $("send-text").value = "";
  loadEventsSoon();
}

// ---------------------------------------------------------------- session options

const SETTING_FIELDS = () => [...document.querySelectorAll("#respawn-form [data-setting]")];

async function loadPresets() {
  const list = await call("presets");
  if (list === FAILED) return false;
  presets = list;
  return true;
}

function presetByName(name) {
  return presets.find((p) => p.name === name);
}

function presetLabel(name) {
  const p = presetByName(name);
  return p ? p.title : name;
}

function fillPresetSelect(select, { offLabel = null, customLabel = null } = {}) {
  const keep = select.value;
  const groups = [];
  if (offLabel !== null) groups.push(el("option", { value: "" }, offLabel));
  const builtin = presets.filter((p) => p.source !== "user");
  const user = presets.filter((p) => p.source === "user");
  const opt = (p) => el("option", { value: p.name, title: p.description || "" }, p.title || p.name);
  if (builtin.length) groups.push(el("optgroup", { label: "Built-in" }, ...builtin.map(opt)));
  if (user.length) groups.push(el("optgroup", { label: "Yours" }, ...user.map(opt)));
  if (customLabel !== null) groups.push(el("option", { value: "" }, customLabel));
  select.replaceChildren(...groups);
  if ([...select.options].some((o) => o.value === keep)) select.value = keep;
}

function writeSettings(settings) {
  for (const input of SETTING_FIELDS()) {
    const v = settings[input.dataset.setting];
    if (input.type === "checkbox") input.checked = !!v;
    else if (input.type === "number") input.value = v === undefined ? "" : +(v / Number(input.dataset.unit)).toFixed(3);
    else input.value = v ?? "";
  }
}

// The form's settings, or null (and the first bad field marked) when one is not valid.
function readSettings() {
  const out = {};
  let bad = null;
  for (const input of SETTING_FIELDS()) {
    const key = input.dataset.setting;
    input.removeAttribute("aria-invalid");
    if (input.type === "checkbox") out[key] = input.checked;
    else if (input.type === "number") {
      const n = Number(input.value);
      const min = Number(input.min || 0);
      if (input.value.trim() === "" || !isFinite(n) || n < min) {
        input.setAttribute("aria-invalid", "true");
        bad = bad || input;
      }
      out[key] = n * Number(input.dataset.unit);
    } else out[key] = input.value;
  }
  if (bad) {
    const label = document.querySelector(`label[for="${bad.id}"]`).textContent;
    showError({ code: "invalid_setting", message: `${label}: enter a number of at least ${bad.min}.` });
    bad.focus();
    return null;
  }
  return out;
}

function sameSettings(a, b) {
  return Object.keys(a).every((k) => (typeof a[k] === "number" ? Math.abs(a[k] - b[k]) < 1e-6 : a[k] === b[k]));
}

async function openOptions() {
  if (!openId) return;
  clearError();
  formDirty = false;
  $("options-session").textContent = openId;
  show("options");
  selectOptionsTab("respawn");
  focusHeading("options-view");
  await loadPresets();
  await loadOptions();
}

async function loadOptions() {
  const id = openId;
  const o = await call("session_options", { id });
  if (o === FAILED || id !== openId) return;
  options = o;
  renderOptions();
}

function renderOptions() {
  const o = options;
  if (!o) return;
  fillPresetSelect($("respawn-preset"), { customLabel: "Custom settings" });
  const status = $("respawn-status");
  status.dataset.armed = String(!!o.respawn_active);
  status.dataset.preset = o.preset || "";
  if (o.respawn_active) {
    const what = o.preset ? `the ${presetLabel(o.preset)} preset` : "custom settings";
    const until = o.respawn_until ? ` until ${clock(o.respawn_until)}` : "";
    const left = o.respawn_until ? ` (${span((new Date(o.respawn_until) - Date.now()) / 1000)} left)` : "";
    status.textContent = `Armed with ${what}${until}${left} · ${plural(o.respawn_cycles || 0, "cycle", "cycles")} so far.`;
  } else {
    status.textContent = "Off. Choose a preset, adjust it if you like, and press Enable.";
  }
  if (o.held) status.textContent += " Held: no cycle starts until you release the session.";
  status.className = `status ${o.respawn_active ? "on" : "off"}`;

  if (!formDirty) {
    const name = o.preset && presetByName(o.preset) ? o.preset : (o.respawn ? "" : (presets[0] || {}).name || "");
    $("respawn-preset").value = name;
    const base = o.respawn || (presetByName(name) || {}).settings;
    if (base) writeSettings(base);
  }
  updatePresetButtons();
  $("respawn-enable").textContent = o.respawn_active ? "Apply changes" : "Enable";
  $("respawn-disable").disabled = !o.respawn_active;

  // Usage limits and auto-resume.
  const limitAt = o.limit && o.limit.resets_at;
  $("limit-status").textContent = o.limit
    ? (limitAt ? `A usage limit pauses this session until ${clock(limitAt)}.` : "A usage limit pauses this session; its reset time is not known.")
    : "No usage limit holds this session.";
  $("limit-status").dataset.limited = String(!!o.limit);
  $("auto-resume").checked = !!o.auto_resume;
  if (!$("resume-details").open || !resumeDirty) writeResume(o.auto_resume || RESUME_DEFAULTS);

  // Breakers.
  const breakers = o.breakers || [];
  $("breakers").replaceChildren(...(breakers.length ? breakers.map(([name, state]) =>
    el("li", { "data-breaker": name, "data-breaker-state": state },
      el("span", {}, `${name.replaceAll("_", "-")} breaker`), " ",
      el("span", { class: `badge breaker-${state}` }, state.replaceAll("_", "-"))))
    : [el("li", { class: "hint" }, "No breaker guards this session while respawn is off.")]));
  $("breaker-reset").disabled = !breakers.some(([, state]) => state !== "closed");

  $("hold").checked = !!o.held;
  const s = sessions.find((x) => x.id === openId);
  const facts = s ? [["Command", s.command_line], ["Agent", s.agent], ["Directory", s.cwd], ["State", s.shown_state]] : [];
  $("options-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function updatePresetButtons() {
  const p = presetByName($("respawn-preset").value);
  const sentence = (t) => (t ? `${t.charAt(0).toUpperCase()}${t.slice(1)}.` : "");
  $("respawn-preset-description").textContent = !p ? "Settings of your own, not saved as a preset."
    : p.source === "user" ? "One of your presets." : sentence(p.description);
  $("preset-delete").hidden = !(p && p.source === "user");
}

function presetPicked() {
  const p = presetByName($("respawn-preset").value);
  if (p) writeSettings(p.settings);
  formDirty = true;
  updatePresetButtons();
}

function settingEdited() {
  formDirty = true;
  const p = presetByName($("respawn-preset").value);
  if (!p) return;
  const now = readSettingsQuiet();
  if (now && !sameSettings(now, p.settings)) {
    $("respawn-preset").value = "";
    updatePresetButtons();
  }
}

function readSettingsQuiet() {
  const out = {};
  for (const input of SETTING_FIELDS()) {
    const key = input.dataset.setting;
    if (input.type === "checkbox") out[key] = input.checked;
    else if (input.type === "number") {
      if (input.value.trim() === "") return null;
      out[key] = Number(input.value) * Number(input.dataset.unit);
    } else out[key] = input.value;
  }
  return out;
}

async function configure(change) {
  const id = openId;
  const o = await call("configure_session", { id, change: { ...change, source: SOURCE } });
  if (o === FAILED) return false;
  if (id === openId) { options = o; formDirty = false; resumeDirty = false; renderOptions(); }
  loadEventsSoon();
  refreshSoon();
  return true;
}

async function enableRespawn(ev) {
  ev.preventDefault();
  clearError();
  const settings = readSettings();
  if (!settings) return;
  const preset = $("respawn-preset").value || null;
  const wasActive = options && options.respawn_active;
  if (await configure({ respawn: { on: { preset, settings } } })) {
    $("respawn-status").scrollIntoView({ block: "nearest" });
    notice(wasActive ? "Respawn settings updated." : `Respawn is on${preset ? ` with ${presetLabel(preset)}` : ""}.`);
  }
}

async function disableRespawn() {
  clearError();
  if (await configure({ respawn: "off" })) notice("Respawn is off. The agent keeps running; no more cycles start.");
}

const RESUME_DEFAULTS = { policy: "watch", margin: 60, prompt: "continue", retries: 3, fallback: 1800, verify: 180 };
let resumeDirty = false;

function writeResume(r) {
  $("resume-policy").value = r.policy;
  $("resume-margin").value = r.margin;
  $("resume-retries").value = r.retries;
  $("resume-fallback").value = +(r.fallback / 60).toFixed(3);
  $("resume-verify").value = r.verify;
  $("resume-prompt").value = r.prompt;
}

function readResume() {
  const fields = [["resume-margin", 0], ["resume-retries", 1], ["resume-fallback", 1], ["resume-verify", 1]];
  for (const [id, min] of fields) {
    const input = $(id);
    input.removeAttribute("aria-invalid");
    const n = Number(input.value);
    if (input.value.trim() === "" || !isFinite(n) || n < min) {
      input.setAttribute("aria-invalid", "true");
      $("resume-details").open = true;
      input.focus();
      const label = document.querySelector(`label[for="${id}"]`).textContent;
      showError({ code: "invalid_setting", message: `${label}: enter a number of at least ${min}.` });
      return null;
    }
  }
  if (!$("resume-prompt").value.trim()) {
    $("resume-details").open = true;
    $("resume-prompt").focus();
    showError({ code: "invalid_setting", message: "Resume prompt: enter what Nightshift types to resume the agent." });
    return null;
  }
  return {
    policy: $("resume-policy").value,
    margin: Number($("resume-margin").value),
    prompt: $("resume-prompt").value,
    retries: Math.round(Number($("resume-retries").value)),
    fallback: Number($("resume-fallback").value) * 60,
    verify: Number($("resume-verify").value),
  };
}

async function toggleAutoResume() {
  clearError();
  const on = $("auto-resume").checked;
  let change;
  if (on) {
    const r = readResume();
    if (!r) { $("auto-resume").checked = false; return; }
    change = { auto_resume: { on: r } };
  } else change = { auto_resume: "off" };
  if (!(await configure(change))) { $("auto-resume").checked = !on; return; }
  notice(on ? "Nightshift will resume this session when its usage limit resets." : "Auto-resume is off for this session.");
}

async function applyResume(ev) {
  ev.preventDefault();
  clearError();
  const r = readResume();
  if (!r) return;
  if (await configure({ auto_resume: { on: r } })) notice("Auto-resume is on with these settings.");
}

async function toggleHold() {
  clearError();
  const held = $("hold").checked;
  if (!(await configure({ held }))) { $("hold").checked = !held; return; }
  notice(held ? "Session held: no cycle, restart or resume starts until you release it." : "Session released.");
}

async function resetBreakers() {
  clearError();
  const what = await call("reset_breaker", { id: openId });
  if (what === FAILED) return;
  notice(what ? `Reset: ${what}.` : "Breakers reset.");
  loadOptions();
  loadEventsSoon();
}

const BUILTIN_NAMES = ["solo", "subagents", "team", "ralph", "overnight"];

async function savePreset() {
  clearError();
  const input = $("preset-name");
  const name = input.value.trim();
  input.removeAttribute("aria-invalid");
  const problem = !name ? "Enter a name for the preset."
    : !/^[A-Za-z0-9_-]+$/.test(name) ? "A preset name may only hold letters, digits, - and _."
    : BUILTIN_NAMES.includes(name.toLowerCase()) || presets.some((p) => p.name === name && p.source !== "user")
      ? `“${name}” is a built-in preset; choose another name.` : null;
  if (problem) {
    input.setAttribute("aria-invalid", "true");
    input.focus();
    showError({ code: "invalid_preset", message: problem });
    return;
  }
  const settings = readSettings();
  if (!settings) return;
  if ((await call("save_preset", { name, settings })) === FAILED) return;
  await loadPresets();
  fillPresetSelect($("respawn-preset"), { customLabel: "Custom settings" });
  $("respawn-preset").value = name;
  formDirty = true;  // the picker now names the new preset; keep it while the options refresh
  updatePresetButtons();
  input.value = "";
  notice(`Preset “${name}” saved.`);
}

async function deletePreset(name) {
  clearError();
  if ((await call("delete_preset", { name })) === FAILED) return false;
  await loadPresets();
  notice(`Preset “${name}” deleted.`);
  return true;
}

async function deleteSelectedPreset() {
  const name = $("respawn-preset").value;
  if (!name || !(await deletePreset(name))) return;
  fillPresetSelect($("respawn-preset"), { customLabel: "Custom settings" });
  $("respawn-preset").value = "";
  updatePresetButtons();
}

function selectOptionsTab(which) {
  const tabs = { respawn: ["options-tab-respawn", "options-respawn"], session: ["options-tab-session", "options-session-panel"] };
  for (const [key, [tab, panel]] of Object.entries(tabs)) {
    const on = key === which;
    $(tab).setAttribute("aria-selected", String(on));
    $(tab).tabIndex = on ? 0 : -1;
    $(panel).hidden = !on;
  }
}

// ---------------------------------------------------------------- new session

async function prepareNewForm() {
  clearError();
  if (await loadPresets()) fillPresetSelect($("new-preset"), { offLabel: "Off" });
  if (!$("new-cwd").value) $("new-cwd").value = localStorage.getItem("nightshift.cwd") || "";
  $("new-command").focus();
}

async function submitNew(ev) {
  ev.preventDefault();
  clearError();
  for (const id of ["new-command", "new-cwd"]) $(id).removeAttribute("aria-invalid");
  const command = $("new-command").value.trim();
  const cwd = $("new-cwd").value.trim();
  if (!command || !cwd) {
    const missing = !command ? "new-command" : "new-cwd";
    $(missing).setAttribute("aria-invalid", "true");
    $(missing).focus();
    showError({ code: "missing", message: !command ? "Enter the command to run." : "Enter the folder the agent works in." });
    return;
  }
  const request = {
    command, cwd,
    agent: $("new-agent").value || null,
    preset: $("new-preset").value || null,
    auto_resume: $("new-auto-resume").checked,
  };
  $("new-submit").disabled = true;
  const made = await call("new_session", { request });
  $("new-submit").disabled = false;
  if (made === FAILED) return;
  localStorage.setItem("nightshift.cwd", cwd);
  $("new-command").value = "";
  await refresh();
  openSession(made.id);
}

// ---------------------------------------------------------------- usage chip

const BAND_RANK = { ok: 0, green: 0, warn: 1, yellow: 1, high: 2, red: 2 };

function bandName(b) {
  return ["ok", "warn", "high"][BAND_RANK[b] ?? 0];
}

function drawBars(node, values, w, h, gap) {
  const n = values.length || 24;
  const step = w / n;
  node.replaceChildren();
  values.forEach((v, i) => {
    if (v === null || v === undefined) {
      node.append(svg("rect", { x: (i * step).toFixed(2), y: h - 1, width: (step - gap).toFixed(2), height: 1, class: "none" }));
      return;
    }
    const bh = Math.max(1, (Math.min(100, Math.max(0, v)) / 100) * h);
    node.append(svg("rect", {
      x: (i * step).toFixed(2), y: (h - bh).toFixed(2), width: (step - gap).toFixed(2), height: bh.toFixed(2),
      class: bandName(v >= 85 ? "high" : v >= 60 ? "warn" : "ok"),
    }));
  });
}

async function loadUsage() {
  const u = await call("usage");
  if (u === FAILED) return;
  const chip = $("usage-chip");
  const values = u.last_24h_hourly_five_hour_pct || [];
  $("usage-text").textContent = u.chip || "5h – · 7d –";
  let band = "none";
  if (u.bands) {
    const worst = Math.max(BAND_RANK[u.bands.five_hour] ?? 0, BAND_RANK[u.bands.seven_day] ?? 0);
    band = ["ok", "warn", "high"][worst];
  }
  chip.dataset.band = band;
  chip.title = u.chip
    ? `Plan usage: ${u.chip}. Last 24 hours: ${u.sparkline || ""}`
    : "Plan usage appears here once a Claude session reports it.";
  chip.setAttribute("aria-label", u.chip ? `Plan usage ${u.chip}` : "Plan usage: no reading yet");
  drawBars($("usage-spark"), values, 48, 12, 0.4);
  drawBars($("usage-spark-big"), values, 240, 40, 2);
  const l = u.latest;
  const facts = l ? [
    ["5-hour window", `${l.five_hour_pct ?? "–"}%${l.five_hour_resets_at ? `, resets ${clock(l.five_hour_resets_at)}` : ""}`],
    ["7-day window", `${l.seven_day_pct ?? "–"}%${l.seven_day_resets_at ? `, resets ${clock(l.seven_day_resets_at)}` : ""}`],
    ["Last reading", `${ago(l.ts)}${l.session ? ` from session ${l.session}` : ""}`],
  ] : [["Plan usage", "No reading yet. Claude sessions started by Nightshift report it as they work."]];
  $("usage-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function toggleUsage() {
  const panel = $("usage-panel");
  panel.hidden = !panel.hidden;
  $("usage-chip").setAttribute("aria-expanded", String(!panel.hidden));
  if (!panel.hidden) loadUsage();
}

// ---------------------------------------------------------------- digest and morning

async function loadDigest(markViewed = false) {
  const range = $("digest-range").value;
  // Tauri passes command arguments in camelCase: `mark_viewed` on the Rust side is `markViewed` here.
  const got = await call("digest", { range, markViewed });
  if (got === FAILED) return;
  const t = (got.digest && got.digest.totals) || {};
  const items = [
    ["sessions", plural(t.sessions ?? 0, "session", "sessions")],
    ["needs_you", `${t.needs_you ?? 0} need${(t.needs_you ?? 0) === 1 ? "s" : ""} you`],
    ["commits", plural(t.commits ?? 0, "commit", "commits")],
    ["limit_pauses", plural(t.limit_pauses ?? 0, "limit pause", "limit pauses")],
    ["respawn_cycles", plural(t.respawn_cycles ?? 0, "respawn cycle", "respawn cycles")],
  ];
  if (t.cost_usd) items.push(["cost_usd", `$${t.cost_usd.toFixed(2)}`]);
  $("digest-totals").replaceChildren(...items.map(([k, v]) =>
    el("li", { "data-total": k, class: k === "needs_you" && t.needs_you ? "attention" : "" }, v)));
  $("digest-text").textContent = got.text || "Nothing happened in this range.";
  $("digest-text").dataset.range = range;
  if (markViewed) notice("Marked as read. “Since you last looked” now starts from here.");
}

async function loadMorning() {
  $("morning-dot").hidden = true;
  const m = await call("morning");
  if (m === FAILED) return;
  $("morning-empty").hidden = !!m;
  $("morning-body").hidden = !m;
  if (!m) return;
  $("morning-headline").textContent = m.headline;
  $("morning-meta").textContent = `For the night up to ${localTime(m.scheduled_for)} · written ${localTime(m.created_at)}`;
  $("morning-text").textContent = m.text;
}

// ---------------------------------------------------------------- settings

let appSettings = null;

function renderPower(power) {
  if (!power) return;
  const status = $("power-status");
  status.dataset.holding = String(!!power.holding);
  status.textContent = power.holding
    ? `Nightshift is keeping the computer from sleeping while a run is armed. ${power.reason || ""}`.trim()
    : `The computer may sleep as usual. ${power.reason || ""}`.trim();
  $("power-warning").hidden = !power.warning;
  $("power-warning").textContent = power.warning || "";
  // The warning stays in view until it is dismissed; the same warning is not shown again.
  currentPowerWarning = power.warning || null;
  if (!power.warning) $("power-banner").hidden = true;
  else if (power.warning !== dismissedPowerWarning) {
    $("power-banner-text").textContent = `The computer may sleep during a run. ${power.warning}`;
    $("power-banner").hidden = false;
  }
}
let dismissedPowerWarning = null;
let currentPowerWarning = null;

function renderUserPresets() {
  const mine = presets.filter((p) => p.source === "user");
  $("presets-empty").hidden = mine.length > 0;
  $("presets-list").replaceChildren(...mine.map((p) => {
    const s = p.settings || {};
    const summary = `idle ${span(s.idle_timeout || 0)} · runs ${span(s.duration || 0)}${s.clear_and_init ? " · resets context" : ""}`;
    const del = el("button", { type: "button", class: "danger", "data-delete-preset": p.name,
      "aria-label": `Delete preset ${p.name}` }, "Delete");
    del.addEventListener("click", async () => { if (await deletePreset(p.name)) renderUserPresets(); });
    return el("li", { "data-preset": p.name }, el("span", { class: "mono" }, p.name), el("span", { class: "hint" }, summary), del);
  }));
}

async function loadSettings() {
  $("settings-view").dataset.loaded = "false";
  const s = await call("app_settings");
  if (s !== FAILED) {
    appSettings = s;
    for (const box of document.querySelectorAll("[data-notify]")) box.checked = !!(s.notifications || {})[box.dataset.notify];
    $("launch-at-login").checked = !!s.launch_at_login;
    renderPower(s.power);
  }
  if (await loadPresets()) renderUserPresets();
  $("settings-view").dataset.loaded = "true";
}

async function notificationChanged(ev) {
  clearError();
  const switches = {};
  for (const box of document.querySelectorAll("[data-notify]")) switches[box.dataset.notify] = box.checked;
  if ((await call("set_notifications", { switches })) === FAILED) { ev.target.checked = !ev.target.checked; return; }
  if (appSettings) appSettings.notifications = switches;
}

async function launchChanged() {
  clearError();
  const enabled = $("launch-at-login").checked;
  if ((await call("set_launch_at_login", { enabled })) === FAILED) { $("launch-at-login").checked = !enabled; return; }
  notice(enabled ? "Nightshift will start when you log in." : "Nightshift will no longer start at login.");
}

async function pauseAll() {
  clearError();
  const n = await call("pause_all");
  if (n === FAILED) return;
  notice(n ? `Held ${plural(n, "session", "sessions")}: no cycle, restart or resume starts until you resume them.` : "No session to hold.");
  refreshSoon();
}

async function resumeAll() {
  clearError();
  const n = await call("resume_all");
  if (n === FAILED) return;
  notice(n ? `Released ${plural(n, "session", "sessions")}.` : "No session was held.");
  refreshSoon();
}

// ---------------------------------------------------------------- wiring

for (const b of document.querySelectorAll("nav [data-view]")) {
  b.addEventListener("click", () => { clearError(); show(b.dataset.view); focusHeading(`${b.dataset.view}-view`); });
}
$("back").addEventListener("click", closeSession);
$("options-back").addEventListener("click", () => openSession(openId));
$("open-options").addEventListener("click", openOptions);
$("stop-session").addEventListener("click", stopOpen);
$("send-form").addEventListener("submit", sendText);
$("error-close").addEventListener("click", clearError);
$("power-banner-close").addEventListener("click", () => {
  $("power-banner").hidden = true;
  dismissedPowerWarning = currentPowerWarning;
});
$("notice-close").addEventListener("click", () => { $("notice").hidden = true; });
$("usage-chip").addEventListener("click", toggleUsage);
$("pause-all").addEventListener("click", pauseAll);
$("resume-all").addEventListener("click", resumeAll);

$("new-form").addEventListener("submit", submitNew);
$("new-cancel").addEventListener("click", () => show("list"));

$("options-tab-respawn").addEventListener("click", () => selectOptionsTab("respawn"));
$("options-tab-session").addEventListener("click", () => selectOptionsTab("session"));
for (const tab of document.querySelectorAll("[role=tab]")) {
  tab.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowRight" && ev.key !== "ArrowLeft") return;
    const next = tab.id === "options-tab-respawn" ? "session" : "respawn";
    selectOptionsTab(next);
    $(`options-tab-${next}`).focus();
  });
}
$("respawn-preset").addEventListener("change", presetPicked);
for (const input of SETTING_FIELDS()) input.addEventListener("input", settingEdited);
$("respawn-form").addEventListener("submit", enableRespawn);
$("respawn-disable").addEventListener("click", disableRespawn);
$("preset-save").addEventListener("click", savePreset);
$("preset-name").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); savePreset(); } });
$("preset-delete").addEventListener("click", deleteSelectedPreset);
$("auto-resume").addEventListener("change", toggleAutoResume);
$("resume-form").addEventListener("submit", applyResume);
$("resume-form").addEventListener("input", () => { resumeDirty = true; });
$("hold").addEventListener("change", toggleHold);
$("breaker-reset").addEventListener("click", resetBreakers);

$("digest-range").addEventListener("change", () => loadDigest());
$("digest-mark").addEventListener("click", () => loadDigest(true));

for (const box of document.querySelectorAll("[data-notify]")) box.addEventListener("change", notificationChanged);
$("launch-at-login").addEventListener("change", launchChanged);

document.addEventListener("keydown", (ev) => {
  if (ev.key !== "Escape" || ev.defaultPrevented) return;
  if (ev.target.closest && ev.target.closest("input, textarea, select")) return;
  if (!$("usage-panel").hidden) { toggleUsage(); $("usage-chip").focus(); return; }
  if (view === "options") openSession(openId);
  else if (view === "detail") closeSession();
});

listen("journal", (e) => {
  const events = Array.isArray(e.payload) ? e.payload : [];
  refreshSoon();
  if (openId && events.some((ev) => ev.session === openId)) {
    if (view === "detail") loadEventsSoon();
    if (view === "options") loadOptionsSoon();
  }
  if (events.some((ev) => ev.event === "usage")) loadUsage();
});
const loadOptionsSoon = debounce(loadOptions, 200);
listen("open-session", async (e) => { clearError(); await refresh(); openSession(String(e.payload)); });
listen("show-view", (e) => {
  const name = { "new-session": "new", digest: "digest", morning: "morning", settings: "settings", sessions: "list" }[e.payload];
  if (name) { clearError(); show(name); focusHeading(`${name}-view`); }
});
listen("morning", (e) => {
  if (view === "morning") loadMorning();
  else {
    $("morning-dot").hidden = false;
    notice(`Morning summary ready: ${e.payload}`);
  }
});
listen("power", (e) => renderPower(e.payload));

// A session whose supervisor died becomes `lost` without an event of its own; look again now and then.
setInterval(refresh, 5000);
setInterval(loadUsage, 60000);
setInterval(() => { if (view === "options" && !formDirty) loadOptions(); }, 5000);
show("list");
loadUsage();
call("app_settings").then((s) => { if (s !== FAILED && s.power && s.power.warning) renderPower(s.power); });
