// Nightshift's window: the sessions in the journal, live; one session's screen, journal and options;
// new sessions; the usage chip; the away digest, the morning run summary and the app's settings.
// This module, the window's entry (index.html), wires what each view does as it is shown, the controls
// and the core's events to the other modules, and starts the window. Modules import downward only:
// from here to the views, then the core (tests/window_modules.rs keeps it so).

import {
  $, app, call, clearError, debounce, el, focusHeading, listen, notice, refresh, refreshSoon, show, wire,
} from "./core.js";
import { loadList, pauseAll, resumeAll } from "./list.js";
import { loadWorktrees } from "./worktrees.js";
import {
  SETTING_FIELDS, applyResume, deleteSelectedPreset, disableRespawn, enableRespawn, loadOptions, openOptions,
  presetPicked, resetBreakers, savePreset, selectOptionsTab, settingEdited, toggleAutoResume, toggleHold,
} from "./options.js";
import { checkNewSession, prepareReady, runCanary, runReady } from "./ready.js";
import {
  closeSession, loadEventsSoon, loadHandoff, loadLives, openSession, resumeOpen, sendText, stopOpen, stopScreen,
} from "./session.js";
import { cutChanged, pickLife, seekBar, stopReplay, togglePlay } from "./replay.js";
import { closeTerminal, focusTerminal, release, takeOver } from "./terminal.js";
import {
  agentChosen, dismissPowerBanner, keepResumesChanged, launchChanged, loadDigest, loadMorning, loadSettings, loadUsage,
  notificationChanged, prepareNewForm, renderPower, savePace, savePush, setUpPhone, showNewKind, showNewStart, submitNew,
  toggleUsage,
} from "./views.js";

// ---------------------------------------------------------------- views

// What each view does as it is shown (the routing itself is the core's `show`).
wire({
  refresh: loadList,
  leftDetail: () => { stopScreen(); closeTerminal(); stopReplay(); },
  entered: {
    list: () => { refresh(); loadWorktrees(true); },
    new: () => prepareNewForm(),
    digest: () => loadDigest(),
    morning: () => loadMorning(),
    settings: () => loadSettings(),
    ready: () => prepareReady(),
  },
});

// ---------------------------------------------------------------- wiring

for (const b of document.querySelectorAll("nav [data-view]")) {
  b.addEventListener("click", () => { clearError(); show(b.dataset.view); focusHeading(`${b.dataset.view}-view`); });
}
$("back").addEventListener("click", closeSession);
$("options-back").addEventListener("click", () => openSession(app.openId));
$("open-options").addEventListener("click", openOptions);
$("stop-session").addEventListener("click", stopOpen);
$("resume-session").addEventListener("click", resumeOpen);
$("send-form").addEventListener("submit", sendText);
$("take-over").addEventListener("click", takeOver);
$("release").addEventListener("click", release);
$("error-close").addEventListener("click", clearError);
$("power-banner-close").addEventListener("click", dismissPowerBanner);
$("notice-close").addEventListener("click", () => { $("notice").hidden = true; });
$("usage-chip").addEventListener("click", toggleUsage);
$("pause-all").addEventListener("click", pauseAll);
$("resume-all").addEventListener("click", resumeAll);

$("new-form").addEventListener("submit", submitNew);
for (const radio of document.querySelectorAll('#new-form input[name="kind"]')) radio.addEventListener("change", showNewKind);
$("new-start").addEventListener("change", showNewStart);
$("new-cancel").addEventListener("click", () => show("list"));
$("new-cwd").addEventListener("change", checkNewSession);
$("new-agent").addEventListener("change", checkNewSession);
$("new-agent").addEventListener("change", agentChosen);
$("new-command").addEventListener("input", agentChosen);
$("ready-run").addEventListener("click", runReady);
$("ready-canary").addEventListener("click", runCanary);
$("life-pick").addEventListener("change", () => loadLives(Number($("life-pick").value)));
$("replay-play").addEventListener("click", togglePlay);
$("replay-seek").addEventListener("input", seekBar);
$("replay-life").addEventListener("change", pickLife);
$("replay-cut").addEventListener("change", cutChanged);
$("replay-open").addEventListener("click", () => {
  $("replay").scrollIntoView({ block: "start" });
  $("replay-play").focus({ preventScroll: true });
});
$("ready-cwd").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); runReady(); } });

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
$("resume-form").addEventListener("input", () => { app.resumeDirty = true; });
$("hold").addEventListener("change", toggleHold);
$("breaker-reset").addEventListener("click", resetBreakers);

$("digest-range").addEventListener("change", () => loadDigest());
$("digest-mark").addEventListener("click", () => loadDigest(true));

for (const box of document.querySelectorAll("[data-notify]")) box.addEventListener("change", notificationChanged);
$("launch-at-login").addEventListener("change", launchChanged);
$("keep-resumes").addEventListener("change", keepResumesChanged);
$("pace-form").addEventListener("submit", savePace);
$("push-form").addEventListener("submit", savePush);
$("phone-setup").addEventListener("click", setUpPhone);

document.addEventListener("keydown", (ev) => {
  if (ev.key !== "Escape" || ev.defaultPrevented) return;
  if (ev.target.closest && ev.target.closest("input, textarea, select")) return;
  if (!$("usage-panel").hidden) { toggleUsage(); $("usage-chip").focus(); return; }
  if (app.view === "options") openSession(app.openId);
  else if (app.view === "detail") closeSession();
});

listen("journal", (e) => {
  const events = Array.isArray(e.payload) ? e.payload : [];
  refreshSoon();
  if (app.openId && events.some((ev) => ev.session === app.openId)) {
    if (app.view === "detail") loadEventsSoon();
    if (app.view === "detail" && events.some((ev) => ev.session === app.openId && ev.event === "handoff")) loadHandoff();
    if (app.view === "options") loadOptionsSoon();
  }
  if (events.some((ev) => ev.event === "usage")) loadUsage();
});
const loadOptionsSoon = debounce(loadOptions, 200);
// From the tray's session entry or a notification: the session's page, its terminal in view.
listen("open-session", async (e) => {
  clearError();
  await refresh();
  await openSession(String(e.payload));
  focusTerminal();
});
listen("show-view", (e) => {
  const name = { "new-session": "new", digest: "digest", morning: "morning", settings: "settings", sessions: "list",
                 ready: "ready" }[e.payload];
  if (name) { clearError(); show(name); focusHeading(`${name}-view`); }
});
listen("morning", (e) => {
  if (app.view === "morning") loadMorning();
  else {
    $("morning-dot").hidden = false;
    notice(`Morning summary ready: ${e.payload}`);
  }
});
listen("power", (e) => renderPower(e.payload));

// A session whose supervisor died becomes `lost` without an event of its own; look again now and then.
setInterval(refresh, 5000);
setInterval(loadUsage, 60000);
setInterval(() => { if (app.view === "options" && !app.formDirty) loadOptions(); }, 5000);
show("list");
loadUsage();
// Files the app started without, a journal that cannot be written: said until fixed.
async function loadProblems() {
  const got = await call("problems");
  if (!got.ok) return;
  $("problem-list").replaceChildren(...got.value.map((p) => el("li", {}, p)));
  $("problem-banner").hidden = got.value.length === 0;
}
loadProblems();
setInterval(() => { if (!document.hidden) loadProblems(); }, 10000);
call("app_settings").then((got) => { if (got.ok && got.value.power && got.value.power.warning) renderPower(got.value.power); });
