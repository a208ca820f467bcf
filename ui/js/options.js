// Session options: respawn with its presets (pick, edit, save, delete), auto-resume after usage limits,
// the breakers, and holding the session.

import {
  $, app, call, clearError, clock, el, focusHeading, notice, plural, refreshSoon, show, showError, span,
} from "./core.js";
import { loadEventsSoon } from "./session.js";

export const SETTING_FIELDS = () => [...document.querySelectorAll("#respawn-form [data-setting]")];

export async function loadPresets() {
  const got = await call("presets");
  if (!got.ok) return false;
  app.presets = got.value;
  return true;
}

function presetByName(name) {
  return app.presets.find((p) => p.name === name);
}

function presetLabel(name) {
  const p = presetByName(name);
  return p ? p.title : name;
}

export function fillPresetSelect(select, { offLabel = null, customLabel = null } = {}) {
  const keep = select.value;
  const groups = [];
  if (offLabel !== null) groups.push(el("option", { value: "" }, offLabel));
  const builtin = app.presets.filter((p) => p.source !== "user");
  const user = app.presets.filter((p) => p.source === "user");
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
    else if (input.dataset.kind === "list") input.value = (v || []).map((x) => +x.toFixed(3)).join(", ");
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
    else if (input.dataset.kind === "list") {
      const list = input.value.split(",").map((x) => x.trim()).filter((x) => x !== "").map(Number);
      if (!list.length || list.some((n) => !isFinite(n) || n < 0)) {
        input.setAttribute("aria-invalid", "true");
        if (!bad) {
          const label = document.querySelector(`label[for="${input.id}"]`).textContent;
          showError({ code: "invalid_setting", message: `${label}: enter seconds separated by commas, such as 2, 10, 30.` });
          input.focus();
          return null;
        }
      }
      out[key] = list;
    } else if (input.type === "number") {
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
  const same = (x, y) => (typeof x === "number" ? Math.abs(x - y) < 1e-6
    : Array.isArray(x) ? Array.isArray(y) && x.length === y.length && x.every((v, i) => same(v, y[i])) : x === y);
  return Object.keys(a).every((k) => same(a[k], b[k]));
}

export async function openOptions() {
  if (!app.openId) return;
  clearError();
  app.formDirty = false;
  $("options-session").textContent = app.openId;
  show("options");
  selectOptionsTab("respawn");
  focusHeading("options-view");
  await loadPresets();
  await loadOptions();
}

export async function loadOptions() {
  const id = app.openId;
  const got = await call("session_options", { id });
  if (!got.ok || id !== app.openId) return;
  app.options = got.value;
  renderOptions();
}

function renderOptions() {
  const o = app.options;
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
  const awake = o.awake || {};
  $("awake-status").textContent = awake.reason
    ? `${awake.hold ? "Keeps the computer awake" : "Lets the computer sleep"}: ${awake.reason}.`
      + (awake.next_action ? ` Next action ${clock(awake.next_action)}.` : "")
    : "";
  $("awake-status").dataset.hold = String(!!awake.hold);
  status.className = `status ${o.respawn_active ? "on" : "off"}`;

  if (!app.formDirty) {
    const name = o.preset && presetByName(o.preset) ? o.preset : (o.respawn ? "" : (app.presets[0] || {}).name || "");
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
      + (o.resume_due ? ` Nightshift resumes it at ${clock(o.resume_due)}; if Nightshift quits first, the next start does.` : "")
    : "No usage limit holds this session.";
  $("limit-status").dataset.limited = String(!!o.limit);
  $("auto-resume").checked = !!o.auto_resume;
  if (!$("resume-details").open || !app.resumeDirty) writeResume(o.auto_resume || o.auto_resume_defaults);

  // Breakers.
  const breakers = o.breakers || [];
  $("breakers").replaceChildren(...(breakers.length ? breakers.map(([name, state]) =>
    el("li", { "data-breaker": name, "data-breaker-state": state },
      el("span", {}, `${name.replaceAll("_", "-")} breaker`), " ",
      el("span", { class: `badge breaker-${state}` }, state.replaceAll("_", "-"))))
    : [el("li", { class: "hint" }, "No breaker guards this session while respawn is off.")]));
  $("breaker-reset").disabled = !breakers.some(([, state]) => state !== "closed");

  $("hold").checked = !!o.held;
  const s = app.sessions.find((x) => x.id === app.openId);
  const facts = s ? [["Command", s.command_line], ["Agent", s.agent], ["Directory", s.cwd], ["State", s.shown_state]] : [];
  // Whether the agent runs in its own sandbox, as the start decided it (it holds until a new start).
  facts.push(["Sandbox", o.sandbox ? o.sandbox.charAt(0).toUpperCase() + o.sandbox.slice(1) : "Not sandboxed"]);
  if (o.guard) facts.push(["Guard", o.guard.charAt(0).toUpperCase() + o.guard.slice(1)]);
  // What `nightshift doctor --canary` said of the client this session started on.
  if (o.canary) facts.push(["Canary", o.canary.charAt(0).toUpperCase() + o.canary.slice(1)]);
  // The pace its cycles keep, and where it parked them.
  const pace = o.pace || {};
  const kept = [pace.morning_reserve && `${pace.morning_reserve} kept for the morning`,
    pace.weekly_pace != null && `the weekly pace, ${pace.weekly_pace} points of slack`].filter(Boolean);
  if (kept.length) {
    facts.push(["Pace", kept.join("; ") + (o.parked_until ? `. Parked until ${clock(o.parked_until)} ${o.parked_why}` : "")]);
  }
  const sw = o.account_switch;
  if (sw) {
    facts.push(["Account", sw.account || "The client's own"]);
    facts.push(["Account switch", sw.due_to ? `moving to ${sw.due_to} at the end of this turn`
      : `at ${sw.threshold}% to whichever of ${sw.accounts.join(", ")} has the most left`
        + (sw.quiet_until ? `; not before ${clock(sw.quiet_until)}` : "")]);
  }
  $("options-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  renderFence(o.fence);
}

// Tonight's network fence: the hosts it lets through and why, what the project looks like it needs
// beyond them, and what it refused, each with a button that lets it through from now on.
function renderFence(f) {
  $("fence").hidden = !f;
  if (!f) return;
  $("fence-status").textContent = f.fence === "open"
    ? "Every host is let through; each connection is journalled."
    : f.hosts.length ? `The agent's commands reach these hosts only (the ${f.fence} fence):`
      : "The agent's commands reach no host tonight.";
  $("fence-hosts").replaceChildren(...f.hosts.map((h) =>
    el("li", { "data-host": h.host }, el("span", { class: "mono" }, h.host), ` — ${h.why}`)));
  $("fence-warnings").replaceChildren(...(f.warnings || []).map((w) => el("li", { class: "hint" }, w)));
  const refused = f.refused || [];
  $("fence-refused-heading").hidden = !refused.length;
  $("fence-refused").replaceChildren(...refused.map(([host, n]) =>
    el("li", { "data-refused": host },
      el("span", { class: "mono" }, host), ` · ${plural(n, "time", "times")} `,
      el("button", { type: "button", onclick: () => allowHost(host) }, "Allow from now on"))));
}

async function allowHost(host) {
  clearError();
  const got = await call("allow_host", { id: app.openId, host });
  if (!got.ok) return;
  app.options = got.value;
  renderOptions();
  notice(`${host} is let through now, and on every night after ([sandbox] network in config.toml).`);
  loadEventsSoon();
}

function updatePresetButtons() {
  const p = presetByName($("respawn-preset").value);
  const sentence = (t) => (t ? `${t.charAt(0).toUpperCase()}${t.slice(1)}.` : "");
  $("respawn-preset-description").textContent = !p ? "Settings of your own, not saved as a preset."
    : p.source === "user" ? "One of your presets." : sentence(p.description);
  $("preset-delete").hidden = !(p && p.source === "user");
}

export function presetPicked() {
  const p = presetByName($("respawn-preset").value);
  if (p) writeSettings(p.settings);
  app.formDirty = true;
  updatePresetButtons();
}

export function settingEdited() {
  app.formDirty = true;
  const p = presetByName($("respawn-preset").value);
  if (!p) return;
  const now = readSettingsQuiet();
  if (now && !sameSettings(now, p.settings)) {
    $("respawn-preset").value = "";
    updatePresetButtons();
  }
}

// The form's settings while they are typed, or null while one is not a value yet; Enable or Save
// (readSettings) is where a bad one is said.
function readSettingsQuiet() {
  const out = {};
  for (const input of SETTING_FIELDS()) {
    const key = input.dataset.setting;
    if (input.type === "checkbox") out[key] = input.checked;
    else if (input.dataset.kind === "list") {
      const list = input.value.split(",").map((x) => x.trim()).filter((x) => x !== "").map(Number);
      if (!list.length || list.some((n) => !isFinite(n) || n < 0)) return null;
      out[key] = list;
    } else if (input.type === "number") {
      if (input.value.trim() === "") return null;
      out[key] = Number(input.value) * Number(input.dataset.unit);
    } else out[key] = input.value;
  }
  return out;
}

async function configure(change) {
  const id = app.openId;
  // configure_session says the change is the app's.
  const got = await call("configure_session", { id, change });
  if (!got.ok) return false;
  if (id === app.openId) { app.options = got.value; app.formDirty = false; app.resumeDirty = false; renderOptions(); }
  loadEventsSoon();
  refreshSoon();
  return true;
}

export async function enableRespawn(ev) {
  ev.preventDefault();
  clearError();
  const settings = readSettings();
  if (!settings) return;
  const preset = $("respawn-preset").value || null;
  const wasActive = app.options && app.options.respawn_active;
  if (await configure({ respawn: { on: { preset, settings } } })) {
    $("respawn-status").scrollIntoView({ block: "nearest" });
    notice(wasActive ? "Respawn settings updated." : `Respawn is on${preset ? ` with ${presetLabel(preset)}` : ""}.`);
  }
}

export async function disableRespawn() {
  clearError();
  if (await configure({ respawn: "off" })) notice("Respawn is off. The agent keeps running; no more cycles start.");
}

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

export async function toggleAutoResume() {
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

export async function applyResume(ev) {
  ev.preventDefault();
  clearError();
  const r = readResume();
  if (!r) return;
  if (await configure({ auto_resume: { on: r } })) notice("Auto-resume is on with these settings.");
}

export async function toggleHold() {
  clearError();
  const held = $("hold").checked;
  if (!(await configure({ held }))) { $("hold").checked = !held; return; }
  notice(held ? "Session held: no cycle, restart or resume starts until you release it." : "Session released.");
}

export async function resetBreakers() {
  clearError();
  const got = await call("reset_breaker", { id: app.openId });
  if (!got.ok) return;
  notice(got.value ? `Reset: ${got.value}.` : "Breakers reset.");
  loadOptions();
  loadEventsSoon();
}

export async function savePreset() {
  clearError();
  const input = $("preset-name");
  const name = input.value.trim();
  input.removeAttribute("aria-invalid");
  const refuse = () => { input.setAttribute("aria-invalid", "true"); input.focus(); };
  if (!name) {
    refuse();
    showError({ code: "invalid_preset", message: "Enter a name for the preset." });
    return;
  }
  const settings = readSettings();
  if (!settings) return;
  // Which names are taken or malformed is the core's to say (Config::save_preset); its refusal
  // is in the banner, and the field is marked.
  const saved = await call("save_preset", { name, settings });
  if (!saved.ok) {
    if (["builtin_preset", "bad_preset_name"].includes(saved.error.code)) refuse();
    return;
  }
  await loadPresets();
  fillPresetSelect($("respawn-preset"), { customLabel: "Custom settings" });
  $("respawn-preset").value = name;
  app.formDirty = true;  // the picker now names the new preset; keep it while the options refresh
  updatePresetButtons();
  input.value = "";
  notice(`Preset “${name}” saved.`);
}

export async function deletePreset(name) {
  clearError();
  if (!(await call("delete_preset", { name })).ok) return false;
  await loadPresets();
  notice(`Preset “${name}” deleted.`);
  return true;
}

export async function deleteSelectedPreset() {
  const name = $("respawn-preset").value;
  if (!name || !(await deletePreset(name))) return;
  fillPresetSelect($("respawn-preset"), { customLabel: "Custom settings" });
  $("respawn-preset").value = "";
  updatePresetButtons();
}

export function selectOptionsTab(which) {
  const tabs = { respawn: ["options-tab-respawn", "options-respawn"], session: ["options-tab-session", "options-session-panel"] };
  for (const [key, [tab, panel]] of Object.entries(tabs)) {
    const on = key === which;
    $(tab).setAttribute("aria-selected", String(on));
    $(tab).tabIndex = on ? 0 : -1;
    $(panel).hidden = !on;
  }
}
