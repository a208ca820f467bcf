// The window's groundwork, imported by the other modules: the command and event bridges, the state
// the views share, DOM and time helpers, the #error and #notice banners, and the routing between
// views, which the entry wires. Everything the core says
// arrives through `invoke` (commands) and events (`listen`). Every command error has one shape,
// { code, message }, and is shown in the #error banner.

// Tauri's API is a global of its own (withGlobalTauri): read once, here.
const { invoke } = window.__TAURI__.core;
export const { listen } = window.__TAURI__.event;

export const $ = (id) => document.getElementById(id);

// The state more than one module reads or writes; anything else stays in the module that owns it.
export const app = {
  sessions: [],
  view: "list",
  openId: null,          // the session whose page (or options) is open
  presets: [],           // [{name, title, description, source, settings}]
  options: null,         // the open session's Options
  formDirty: false,      // the respawn form has edits not yet applied
  resumeDirty: false,    // the resume settings have edits not yet applied
};

// ---------------------------------------------------------------- helpers

export function el(tag, attrs = {}, ...children) {
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

export function svg(tag, attrs = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

export function localTime(ts) {
  const d = new Date(ts);
  return isNaN(d) ? String(ts) : d.toLocaleString();
}

export function clock(ts) {
  const d = new Date(ts);
  if (isNaN(d)) return String(ts);
  const sameDay = d.toDateString() === new Date().toDateString();
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return sameDay ? time : `${d.toLocaleDateString([], { weekday: "short" })} ${time}`;
}

export function ago(ts) {
  const s = Math.round((Date.now() - new Date(ts).getTime()) / 1000);
  if (!(s >= 0)) return localTime(ts);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return localTime(ts);
}

export function span(secs) {
  secs = Math.max(0, Math.round(secs));
  if (secs < 60) return `${secs} s`;
  const m = Math.round(secs / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}

export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

// A Nightshift process runs it (the core says so: `standing`).
export function isLive(s) {
  return !!s && s.standing === "live";
}

// The colour family of a session's state (`shown_state` is only for reading).
export function stateClass(s) {
  if (s.standing === "lost") return "state-lost";
  if (s.standing === "kept") return "state-limit_paused";
  if (s.state === "exited" || s.state === "failed") return s.exit_code === 0 ? "state-done" : "state-bad";
  return `state-${s.state}`;
}

function errorOf(e) {
  if (e && typeof e === "object" && (e.code || e.message)) {
    return { code: e.code || "error", message: e.message || String(e.code) };
  }
  return { code: "error", message: String(e) };
}

export function showError(e) {
  const err = errorOf(e);
  $("error-code").textContent = err.code;
  $("error-message").textContent = err.message;
  $("error").hidden = false;
}

export function clearError() {
  $("error").hidden = true;
}

let noticeTimer = null;
export function notice(text, sticky = false) {
  $("notice-text").textContent = text;
  $("notice").hidden = false;
  clearTimeout(noticeTimer);
  if (!sticky) noticeTimer = setTimeout(() => { $("notice").hidden = true; }, 6000);
}

// Invokes a command. Its result has one shape whatever happened: { ok: true, value } or
// { ok: false, error: { code, message } }. A failure is shown in the #error banner unless the caller
// named its code in `quietCodes` (it says so itself), so no caller swallows one by forgetting.
export async function call(name, args, { quietCodes = [] } = {}) {
  try {
    return { ok: true, value: await invoke(name, args) };
  } catch (e) {
    const error = errorOf(e);
    if (!quietCodes.includes(error.code)) showError(error);
    return { ok: false, error };
  }
}

export function debounce(fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

// ---------------------------------------------------------------- routing, wired in by the entry

// The modules import downward only: main.js (the entry) down to the views, then this core. What a
// view does as it is shown, and the list's refresh, are wired in by the entry, so a view below it
// can route or ask for a fresh list without importing upward.
export const VIEWS = ["list", "new", "detail", "options", "digest", "morning", "ready", "settings"];
const wired = { entered: {}, leftDetail: () => {}, refresh: async () => {} };

export function wire(parts) {
  Object.assign(wired, parts);
}

export function show(name) {
  if (name !== app.view) $("notice").hidden = true;  // a notice is about the view it was shown in
  app.view = name;
  for (const v of VIEWS) $(`${v}-view`).hidden = v !== name;
  for (const b of document.querySelectorAll("nav [data-view]")) {
    const current = b.dataset.view === name || (b.dataset.view === "list" && (name === "detail" || name === "options"));
    if (current) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  if (name !== "detail") wired.leftDetail();
  wired.entered[name]?.();
}

export function focusHeading(section) {
  const h = $(section).querySelector("h2");
  if (h) { h.tabIndex = -1; h.focus({ preventScroll: true }); }
}

// The session list, fetched again now or after a burst of changes settles.
export const refresh = () => wired.refresh();
export const refreshSoon = debounce(refresh, 150);
