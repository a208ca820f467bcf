// The other views: New session, the usage chip and its panel, the away digest, the morning run
// summary and Settings.

import {
  $, ago, app, call, clearError, clock, el, localTime, notice, plural, refresh, showError, span, svg,
} from "./core.js";
import { deletePreset, fillPresetSelect, loadPresets } from "./options.js";
import { checkNewSession } from "./ready.js";
import { openSession } from "./session.js";
import { renderCards } from "./digest.js";
import { drawTimeline } from "./timeline.js";

// ---------------------------------------------------------------- new session

export async function prepareNewForm() {
  clearError();
  if (await loadPresets()) fillPresetSelect($("new-preset"), { offLabel: "Off" });
  await fillAccounts();
  if (!$("new-cwd").value) $("new-cwd").value = localStorage.getItem("nightshift.cwd") || "";
  showNewKind();
  showNewStart();
  checkNewSession();
  $(newKind() === "loop" ? "new-tasks" : "new-command").focus();
}

// The picker lists config.toml's accounts; with none it stays hidden.
async function fillAccounts() {
  const got = await call("accounts");
  if (!got.ok) return;
  const names = got.value;
  const select = $("new-account");
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "" }, "The client's own"),
    ...names.map((n) => el("option", { value: n }, n)));
  select.value = names.includes(chosen) ? chosen : "";
  $("new-account-field").hidden = names.length === 0;
  $("new-switch-field").hidden = names.length === 0;
  $("new-at-limit-field").hidden = names.length === 0;
  agentChosen();
}

// The agent the form starts: the picker's, or the command's program.
function newAgent() {
  const picked = $("new-agent").value;
  if (picked) return picked;
  const program = ($("new-command").value.trim().split(/\s+/)[0] || "").split("/").pop();
  return program === "codex" ? "codex" : program === "claude" ? "claude" : "";
}

// What the agent cannot do yet stays on the form, off, with why.
export function agentChosen() {
  const other = !["claude", "codex"].includes(newAgent());
  for (const sw of [$("new-switch"), $("new-at-limit")]) {
    sw.disabled = other;
    if (other) sw.checked = false;
  }
  $("new-switch-why").hidden = !other;
  // Codex reports no cost: a dollar cap could never be kept.
  const codex = newAgent() === "codex";
  const cost = $("new-max-cost");
  cost.disabled = codex;
  if (codex) cost.value = "";
  $("new-max-cost-why").hidden = !codex;
}

// "At a time" asks for the time.
export function showNewStart() {
  const at = $("new-start").value === "at";
  $("new-start-at-field").hidden = !at;
  if (at && !$("new-start-at").value) $("new-start-at").value = "23:30";
}

// What the form's Start says, for the core.
function newStart() {
  const how = $("new-start").value;
  return { at: how === "at" ? $("new-start-at").value : null, after_reset: how === "after_reset" };
}

function newKind() {
  return $("new-kind-loop").checked ? "loop" : "terminal";
}

// Shows the fields of the kind chosen (a terminal session or a loop).
export function showNewKind() {
  const kind = newKind();
  for (const node of document.querySelectorAll("#new-form [data-kind]")) node.hidden = node.dataset.kind !== kind;
  $("new-submit").textContent = kind === "loop" ? "Start loop" : "Start session";
}

export async function submitNew(ev) {
  ev.preventDefault();
  clearError();
  for (const id of ["new-command", "new-cwd", "new-tasks"]) $(id).removeAttribute("aria-invalid");
  const kind = newKind();
  const command = $("new-command").value.trim();
  const cwd = $("new-cwd").value.trim();
  const tasks = $("new-tasks").value.trim();
  const prompt = $("new-prompt").value.trim();
  const missing = !cwd ? ["new-cwd", "Enter the folder the agent works in."]
    : kind === "terminal" && !command ? ["new-command", "Enter the command to run."]
    : kind === "loop" && !tasks && !prompt ? ["new-tasks", "Give a tasks file, or a prompt for every iteration."]
    : null;
  if (missing) {
    $(missing[0]).setAttribute("aria-invalid", "true");
    $(missing[0]).focus();
    showError({ code: "missing", message: missing[1] });
    return;
  }
  $("new-submit").disabled = true;
  let made;
  if (kind === "loop") {
    const number = (id) => ($(id).value.trim() ? Number($(id).value) : null);
    const request = {
      cwd, agent: $("new-agent").value || null, tasks: tasks || null, prompt: tasks ? null : prompt,
      max_iterations: number("new-max-iterations"), max_cost_usd: number("new-max-cost"),
      max_tokens: number("new-max-tokens"),
      harness_args: $("new-harness-args").value.trim(),
      account: $("new-account").value || null,
      worktree: $("new-worktree").checked,
      worktree_per_task: $("new-worktree-per-task").checked,
      start: newStart(),
    };
    made = await call("new_loop", { request });
  } else {
    const request = {
      command, cwd,
      agent: $("new-agent").value || null,
      preset: $("new-preset").value || null,
      auto_resume: $("new-auto-resume").checked,
      account: $("new-account").value || null,
      switch_accounts: !$("new-switch-field").hidden && $("new-switch").checked,
      at_limit: !$("new-at-limit-field").hidden && $("new-at-limit").checked ? "switch" : null,
      standing: $("new-standing").value.trim() || null,
      failover_to: $("new-failover").value.trim() || null,
      worktree: $("new-worktree").checked,
      start: newStart(),
    };
    made = await call("new_session", { request });
  }
  $("new-submit").disabled = false;
  if (!made.ok) return;
  localStorage.setItem("nightshift.cwd", cwd);
  $("new-command").value = "";
  // A start time is for this session only.
  $("new-start").value = "now";
  showNewStart();
  await refresh();
  openSession(made.value.id);
}

// ---------------------------------------------------------------- usage chip

// One bar per hour, coloured by the band the core gave that hour (green, yellow, red).
function drawBars(node, values, bands, w, h, gap) {
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
      class: bands[i] || "none",
    }));
  });
}

export async function loadUsage() {
  const got = await call("usage");
  if (!got.ok) return;
  const u = got.value;
  const chip = $("usage-chip");
  const values = u.last_24h_hourly_five_hour_pct || [];
  const bands = u.last_24h_hourly_five_hour_band || [];
  // Claude's plan, and Codex's beside it once a Codex session has reported: each its own windows.
  const codex = (u.codex && u.codex.chip) || "";
  const shown = [u.chip, codex && `Codex ${codex}`].filter(Boolean).join(" │ ");
  $("usage-text").textContent = shown || "5h – · 7d –";
  const order = ["none", "green", "yellow", "red"];
  const worse = [u.band, u.codex && u.codex.band].reduce((a, b) => (order.indexOf(b) > order.indexOf(a) ? b : a), "none");
  chip.dataset.band = worse || "none";
  chip.title = shown
    ? `Plan usage: ${shown}.${u.chip ? ` Claude's last 24 hours: ${u.sparkline || ""}` : ""}`
    : "Plan usage appears here once a Claude or Codex session reports it.";
  chip.setAttribute("aria-label", shown ? `Plan usage ${shown}` : "Plan usage: no reading yet");
  drawBars($("usage-spark"), values, bands, 48, 12, 0.4);
  drawBars($("usage-spark-big"), values, bands, 240, 40, 2);
  const l = u.latest;
  const facts = l ? [
    ["5-hour window", `${l.five_hour_pct ?? "–"}%${l.five_hour_resets_at ? `, resets ${clock(l.five_hour_resets_at)}` : ""}`],
    ["7-day window", `${l.seven_day_pct ?? "–"}%${l.seven_day_resets_at ? `, resets ${clock(l.seven_day_resets_at)}` : ""}`],
    ["Last reading", `${ago(l.ts)}${l.session ? ` from session ${l.session}` : ""}`],
  ] : [["Claude plan", "No reading yet. Claude sessions started by Nightshift report it as they work."]];
  // With accounts of your own, each one's windows (the client's own account as "Default").
  const accounts = u.accounts || [];
  if (accounts.length > 1 || accounts.some((a) => a.account)) {
    for (const a of accounts) {
      const resets = a.latest && a.latest.five_hour_resets_at ? `, 5h resets ${clock(a.latest.five_hour_resets_at)}` : "";
      facts.push([`Account ${a.account || "default"}`, `${a.chip}${resets}`]);
    }
  }
  // Codex's plan, apart from Claude's: each of its accounts' windows, from Codex's own data.
  for (const a of (u.codex && u.codex.accounts) || []) {
    const resets = a.latest && a.latest.five_hour_resets_at ? `, 5h resets ${clock(a.latest.five_hour_resets_at)}` : "";
    facts.push([`Codex${a.account ? ` (${a.account})` : ""}`, `${a.chip}${resets}`]);
  }
  $("usage-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

export function toggleUsage() {
  const panel = $("usage-panel");
  panel.hidden = !panel.hidden;
  $("usage-chip").setAttribute("aria-expanded", String(!panel.hidden));
  if (!panel.hidden) loadUsage();
}

// ---------------------------------------------------------------- digest and morning

// The figures above a digest's text, from the same digest the text was made of: the totals, what
// needs you and what is unusual first, then each kind of event the night counted (`counts`).
function renderTotals(list, d) {
  const t = (d && d.totals) || {};
  const c = (d && d.counts) || {};
  const items = [
    ["sessions", plural(t.sessions ?? 0, "session", "sessions"), false],
    ["needs_you", `${t.needs_you ?? 0} need${(t.needs_you ?? 0) === 1 ? "s" : ""} you`, !!t.needs_you],
  ];
  if (t.unusual) items.push(["unusual", `${t.unusual} unusual`, true]);
  items.push(
    ["commits", plural(t.commits ?? 0, "commit", "commits"), false],
    ["limit_pauses", plural(t.limit_pauses ?? 0, "limit pause", "limit pauses"), false],
    ["respawn_cycles", plural(t.respawn_cycles ?? 0, "respawn cycle", "respawn cycles"), false],
  );
  const counted = [
    ["restarts", "restart", "restarts"],
    ["restores", "restore", "restores"],
    ["handoffs", "handoff", "handoffs"],
    ["questions", "question", "questions"],
    ["permissions", "permission prompt", "permission prompts"],
    ["dialogs_unanswered", "dialog unanswered", "dialogs unanswered"],
    ["breakers_opened", "breaker opened", "breakers opened"],
    ["breakers_closed", "breaker closed", "breakers closed"],
    ["account_switches", "account switch", "account switches"],
    ["guard_denials", "guard denial", "guard denials"],
    ["pushes_sent", "push sent", "pushes sent"],
    ["pushes_failed", "push failed", "pushes failed"],
    ["phone_applied", "answer from the phone", "answers from the phone"],
    ["phone_refused", "phone action refused", "phone actions refused"],
    ["suspends", "suspend", "suspends"],
    ["salvages", "salvage snapshot", "salvage snapshots"],
  ];
  for (const [key, one, many] of counted) {
    if (c[key]) items.push([key, plural(c[key], one, many), key === "pushes_failed"]);
  }
  if (t.cost_usd) items.push(["cost_usd", `$${t.cost_usd.toFixed(2)}`, false]);
  list.replaceChildren(...items.map(([k, v, attention]) =>
    el("li", { "data-total": k, class: attention ? "attention" : "" }, v)));
}

export async function loadDigest(markViewed = false) {
  const range = $("digest-range").value;
  // Tauri passes command arguments in camelCase: `mark_viewed` on the Rust side is `markViewed` here.
  const got = await call("digest", { range, markViewed });
  if (!got.ok) return;
  const d = got.value;
  renderTotals($("digest-totals"), d.digest);
  drawTimeline($("digest-timeline"), d.timeline);
  renderCards($("digest-cards"), d.digest, () => loadDigest());
  $("digest-cards").dataset.range = range;
  $("digest-text").textContent = d.text || "Nothing happened in this range.";
  $("digest-text").dataset.range = range;
  if (markViewed) notice("Marked as read. “Since you last looked” now starts from here.");
}

export async function loadMorning() {
  $("morning-dot").hidden = true;
  const got = await call("morning");
  if (!got.ok) return;
  const m = got.value;
  $("morning-empty").hidden = !!m;
  $("morning-body").hidden = !m;
  if (!m) return;
  $("morning-headline").textContent = m.headline;
  $("morning-meta").textContent = `For the night up to ${localTime(m.scheduled_for)} · written ${localTime(m.created_at)}`;
  // A summary of a night when nothing ran has no digest: no figures.
  $("morning-totals").hidden = !m.digest;
  if (m.digest) renderTotals($("morning-totals"), m.digest);
  drawTimeline($("morning-timeline"), m.timeline);
  $("morning-cards").hidden = !m.digest;
  if (m.digest) renderCards($("morning-cards"), m.digest, () => loadMorning());
  $("morning-text").textContent = m.text;
}

// ---------------------------------------------------------------- settings

export function renderPower(power) {
  if (!power) return;
  const status = $("power-status");
  status.dataset.holding = String(!!power.holding);
  status.textContent = power.holding
    ? `Nightshift is keeping the computer from sleeping. ${power.reason || ""}`.trim()
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

export function dismissPowerBanner() {
  $("power-banner").hidden = true;
  dismissedPowerWarning = currentPowerWarning;
}

function renderUserPresets() {
  const mine = app.presets.filter((p) => p.source === "user");
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

export async function loadSettings() {
  $("settings-view").dataset.loaded = "false";
  const got = await call("app_settings");
  if (got.ok) {
    const s = got.value;
    for (const box of document.querySelectorAll("[data-notify]")) box.checked = !!(s.notifications || {})[box.dataset.notify];
    $("launch-at-login").checked = !!s.launch_at_login;
    $("keep-resumes").checked = !!s.keep_resumes_on_quit;
    $("pace-morning").value = (s.pace || {}).morning_reserve || "";
    $("pace-weekly").value = (s.pace || {}).weekly_pace ?? "";
    renderPush(s.push || {}, s.push_token || null);
    renderPhone(s.phone || null);
    renderPower(s.power);
  }
  if (await loadPresets()) renderUserPresets();
  $("settings-view").dataset.loaded = "true";
}

export async function notificationChanged(ev) {
  clearError();
  const switches = {};
  for (const box of document.querySelectorAll("[data-notify]")) switches[box.dataset.notify] = box.checked;
  if (!(await call("set_notifications", { switches })).ok) { ev.target.checked = !ev.target.checked; return; }
}

// The push kinds config.toml has, the morning summary's among them.
let pushKinds = {};

function renderPush(p, token) {
  $("push-ntfy").value = p.ntfy || "";
  $("push-webhook").value = p.webhook || "";
  $("push-click").value = p.click || "";
  $("push-short").checked = !!p.short;
  for (const box of document.querySelectorAll("[data-push]")) box.checked = !!(p.kinds || {})[box.dataset.push];
  // The morning summary has no switch here: it is the desktop's, kept as the file has it.
  pushKinds = p.kinds || {};
  $("push-token-state").textContent = token === "keyring" ? "the token is in your keyring."
    : token ? "a token is there." : "there is none now.";
}

export async function savePush(ev) {
  ev.preventDefault();
  clearError();
  const kinds = { ...pushKinds };
  for (const box of document.querySelectorAll("[data-push]")) kinds[box.dataset.push] = box.checked;
  const settings = { ntfy: $("push-ntfy").value, webhook: $("push-webhook").value, click: $("push-click").value,
    short: $("push-short").checked, kinds };
  if (!(await call("set_push", { settings })).ok) return;
  const on = settings.ntfy.trim() || settings.webhook.trim();
  notice(on ? "Saved: the next notices go to your phone." : "Saved: nothing goes to your phone.");
}

// The phone's answers: the topic it subscribes to, as a QR code, once they are set up.
function renderPhone(phone) {
  const box = $("phone-box");
  box.dataset.setUp = phone ? "true" : "false";
  $("phone-qr").hidden = !phone?.qr_svg;
  // The SVG is drawn by the core from the topic's URL alone.
  $("phone-qr").innerHTML = phone?.qr_svg || "";
  $("phone-topic").hidden = !phone;
  $("phone-topic").textContent = phone ? `Subscribe to ${phone.publish} in the ntfy app: scan this, or add it by hand.` : "";
  $("phone-setup").textContent = phone ? "Make new topics and a new key" : "Set up answers from the phone";
  $("phone-setup").title = phone ? "The buttons of every push before stop working; the phone subscribes again." : "";
}

export async function setUpPhone() {
  clearError();
  const fresh = $("phone-box").dataset.setUp === "true";
  const r = await call("phone_setup", { fresh });
  if (!r.ok) return;
  renderPhone(r.value.phone);
  notice(fresh ? "New topics and a new key: subscribe to the new topic on the phone."
    : "Set up: the next questions reach the phone with buttons that answer them.");
}

export async function savePace(ev) {
  ev.preventDefault();
  clearError();
  const morning = $("pace-morning").value.trim();
  const weekly = $("pace-weekly").value.trim();
  const r = await call("set_pace", { morningReserve: morning, weeklyPace: weekly });
  if (!r.ok) return;
  notice(r.value.describe ? `Saved: new sessions with respawn ${r.value.describe}.` : "Saved: no pace; cycles run to the limit.");
}

export async function keepResumesChanged() {
  clearError();
  const keep = $("keep-resumes").checked;
  if (!(await call("set_keep_resumes_on_quit", { keep })).ok) { $("keep-resumes").checked = !keep; return; }
  notice(keep ? "Quitting keeps pending resumes for the next start." : "Quitting now cancels pending resumes.");
}

export async function launchChanged() {
  clearError();
  const enabled = $("launch-at-login").checked;
  if (!(await call("set_launch_at_login", { enabled })).ok) { $("launch-at-login").checked = !enabled; return; }
  notice(enabled ? "Nightshift will start when you log in." : "Nightshift will no longer start at login.");
}
