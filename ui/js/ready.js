// "Ready for tonight?": the doctor's checks (the same as `nightshift doctor`), as a view of their
// own and, on the New session page, the WARNs and FAILs for the agent and folder about to start.

import { $, call, el } from "./core.js";
import { drawPlan } from "./timeline.js";

function checkItem(c) {
  const badge = el("span", { class: `badge check-${c.status}` }, c.status.toUpperCase());
  const text = el("span", { class: "check-text" }, `${c.subject}: ${c.detail}`);
  const remedy = c.remedy ? el("span", { class: "check-remedy" }, c.remedy) : null;
  return el("li", { "data-id": c.id, "data-status": c.status }, badge, " ", text, remedy ? el("br") : null, remedy);
}

export async function runReady() {
  const cwds = $("ready-cwd").value.trim().split(/\s+/).filter(Boolean);
  localStorage.setItem("nightshift.ready.cwd", $("ready-cwd").value.trim());
  $("ready-run").disabled = true;
  $("ready-summary").textContent = "Checking…";
  $("ready-list").replaceChildren();
  const got = await call("doctor", { ask: { cwds, probe: true } });
  $("ready-run").disabled = false;
  if (!got.ok) { $("ready-summary").textContent = ""; return; }
  const report = got.value;
  const { pass, warn, fail } = report.counts;
  $("ready-summary").textContent = fail ? `Not ready: ${fail} to fix, ${warn} warning(s), ${pass} fine.`
    : warn ? `Ready, with ${warn} warning(s) (${pass} fine).` : `Ready for tonight: all ${pass} checks pass.`;
  $("ready-summary").dataset.ok = String(report.ok);
  // The problems first, the passes after.
  const order = { fail: 0, warn: 1, pass: 2 };
  const checks = [...report.checks].sort((a, b) => order[a.status] - order[b.status]);
  $("ready-list").replaceChildren(...checks.map(checkItem));
}

// "Check tonight's client": the canary, one line per signal, the failures first.
export async function runCanary() {
  $("ready-canary").disabled = true;
  $("canary-summary").textContent = "Running each client through the canary's script (under a minute each)…";
  $("canary-list").replaceChildren();
  const got = await call("canary");
  $("ready-canary").disabled = false;
  if (!got.ok) { $("canary-summary").textContent = ""; return; }
  const report = got.value;
  const { pass, fail } = report.counts;
  const skip = report.counts.skip || 0;
  $("canary-summary").textContent = fail ? `Tonight's client is not ready: ${fail} failed, ${pass} passed.`
    : `Tonight's client is ready: all ${pass} checks passed${skip ? `, ${skip} client(s) skipped` : ""}.`;
  $("canary-summary").dataset.ok = String(report.ok);
  const order = { fail: 0, skip: 1, warn: 2, pass: 3 };
  const checks = [...report.checks].sort((a, b) => order[a.status] - order[b.status]);
  $("canary-list").replaceChildren(...checks.map(checkItem));
  loadPlan();
}

async function loadPlan() {
  const got = await call("plan");
  if (!got.ok) return;
  drawPlan($("plan-timeline"), got.value.plan);
  $("plan-text").textContent = got.value.text;
}

export function prepareReady() {
  if (!$("ready-cwd").value) {
    $("ready-cwd").value = localStorage.getItem("nightshift.ready.cwd") || localStorage.getItem("nightshift.cwd") || "";
  }
  loadPlan();
  runReady();
}

// The New session page: what would stall this agent in this folder (no probe: it stays quick).
let newReadyAsked = 0;
export async function checkNewSession() {
  const cwd = $("new-cwd").value.trim();
  if (!cwd) { $("new-ready").hidden = true; return; }
  const asked = ++newReadyAsked;
  const agent = $("new-agent").value || "claude";
  const got = await call("doctor", { ask: { agents: [agent], cwds: [cwd], probe: false } }, { quietCodes: ["bad_agent"] });
  if (asked !== newReadyAsked || !got.ok) return;
  // Only what this start depends on: the agent, the folder, the state directory and the power.
  const relevant = got.value.checks.filter((c) => c.status !== "pass" && /^(harness|cwd|state|power)\./.test(c.id));
  $("new-ready-list").replaceChildren(...relevant.map(checkItem));
  $("new-ready").hidden = relevant.length === 0;
}
