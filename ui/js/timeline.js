// Timelines drawn as SVG: the night per session (the digest and the morning summary) and the plan
// for the rest of the night (Ready?). Times on the bands are the journal's, kept as data attributes.

import { localTime, svg } from "./core.js";
import { openSession } from "./session.js";

const TL = { width: 1000, left: 130, right: 10, lane: 20, gap: 6, fill: 44, axis: 18 };

function tlScale(from, to) {
  const a = Date.parse(from), b = Date.parse(to);
  const span = Math.max(1, b - a);
  return (t) => TL.left + ((Date.parse(t) - a) / span) * (TL.width - TL.left - TL.right);
}

function tlTicks(node, from, to, y, x) {
  const a = Date.parse(from), b = Date.parse(to);
  const hours = (b - a) / 3600e3;
  const step = hours > 36 ? 6 : hours > 12 ? 2 : 1;
  const first = new Date(a);
  first.setMinutes(0, 0, 0);
  for (let t = first.getTime() + 3600e3; t < b; t += 3600e3) {
    const d = new Date(t);
    if (d.getHours() % step) continue;
    const px = x(d.toISOString());
    node.append(svg("line", { x1: px, x2: px, y1: 0, y2: y, class: "tick" }));
    const label = svg("text", { x: px, y: y + 13, class: "tick-label", "text-anchor": "middle" });
    label.textContent = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    node.append(label);
  }
}

function tlTitle(node, text) {
  const t = svg("title");
  t.textContent = text;
  node.append(t);
  return node;
}

// The night per session, from `digest::timeline`.
export function drawTimeline(figure, tl) {
  for (const old of figure.querySelectorAll("svg")) old.remove();
  if (!tl || !tl.lanes.length) { figure.hidden = true; return; }
  const x = tlScale(tl.from, tl.to);
  const lanesHeight = tl.lanes.length * (TL.lane + TL.gap);
  const height = lanesHeight + TL.fill + TL.axis;
  const root = svg("svg", { viewBox: `0 0 ${TL.width} ${height}`, role: "img", "data-from": tl.from, "data-to": tl.to,
                            "aria-label": `Timeline of ${tl.lanes.length} session(s)` });
  tlTicks(root, tl.from, tl.to, lanesHeight + TL.fill, x);
  tl.lanes.forEach((lane, i) => {
    const y = i * (TL.lane + TL.gap);
    const name = svg("text", { x: 0, y: y + 14, class: "lane-label" });
    name.textContent = lane.label.length > 20 ? lane.label.slice(0, 19) + "…" : lane.label;
    root.append(tlTitle(name, lane.label));
    for (const b of lane.bands) {
      const rect = svg("rect", { x: x(b.from), y, width: Math.max(1, x(b.to) - x(b.from)), height: TL.lane,
                                 class: `band band-${b.state}`, "data-session": lane.session, "data-state": b.state,
                                 "data-from": b.from, "data-to": b.to });
      root.append(tlTitle(rect, `${b.state.replace("_", " ")} ${localTime(b.from)}–${localTime(b.to)}`));
    }
    // Who worked when: the agent (and account) under each stretch of the lane.
    for (const w of lane.workers || []) {
      const strip = svg("rect", { x: x(w.from), y: y + TL.lane - 3, width: Math.max(1, x(w.to) - x(w.from)), height: 3,
                                  class: `worker worker-${w.agent}`, "data-session": lane.session,
                                  "data-agent": w.agent, "data-from": w.from, "data-to": w.to });
      const who = w.account ? `${w.agent} (account ${w.account})` : w.agent;
      root.append(tlTitle(strip, `${who} ${localTime(w.from)}–${localTime(w.to)}`));
    }
    for (const m of lane.marks) {
      const px = x(m.at);
      const mark = svg("path", { d: `M${px} ${y - 2} l4 -5 h-8 z`, class: `mark mark-${m.kind}`,
                                 "data-session": lane.session, "data-kind": m.kind, "data-at": m.at });
      root.append(tlTitle(mark, `${m.kind} ${localTime(m.at)}: ${m.text}`));
    }
  });
  // The 5-hour window's fill beneath.
  const top = lanesHeight + 4, h = TL.fill - 8;
  const points = tl.usage.filter((u) => u.five_hour_pct !== null && u.five_hour_pct !== undefined)
    .map((u) => `${x(u.at).toFixed(1)},${(top + h - (u.five_hour_pct / 100) * h).toFixed(1)}`);
  root.append(svg("rect", { x: TL.left, y: top, width: TL.width - TL.left - TL.right, height: h, class: "fill-frame" }));
  const label = svg("text", { x: 0, y: top + h / 2 + 4, class: "lane-label" });
  label.textContent = "5-hour window";
  root.append(label);
  if (points.length) root.append(svg("polyline", { points: points.join(" "), class: "fill-line", "data-points": points.length }));
  // A mark, or a moment on a session's band, opens that session's replay there.
  root.addEventListener("click", (ev) => {
    const hit = ev.target.closest("[data-session]");
    if (hit) openSession(hit.dataset.session, hit.dataset.at || hit.dataset.from);
  });
  figure.prepend(root);
  figure.hidden = false;
}

// The plan for the rest of the night, from `plan::Plan`.
export function drawPlan(figure, plan) {
  for (const old of figure.querySelectorAll("svg")) old.remove();
  const x = tlScale(plan.now, plan.until);
  const height = TL.lane + TL.axis + 4;
  const root = svg("svg", { viewBox: `0 0 ${TL.width} ${height}`, role: "img", "aria-label": "Tonight's plan" });
  tlTicks(root, plan.now, plan.until, TL.lane, x);
  const name = svg("text", { x: 0, y: 14, class: "lane-label" });
  name.textContent = "expected";
  root.append(name);
  // Work from now to where it stops, less the waits; the waits over it.
  const stop = Date.parse(plan.stops_at) < Date.parse(plan.until) ? plan.stops_at : plan.until;
  if (Date.parse(stop) > Date.parse(plan.now)) {
    root.append(tlTitle(svg("rect", { x: x(plan.now), y: 0, width: Math.max(1, x(stop) - x(plan.now)), height: TL.lane,
                                      class: "band band-working", "data-plan": "work", "data-from": plan.now,
                                      "data-to": stop }), `work until ${localTime(stop)}`));
  }
  for (const w of plan.waits) {
    // A wait in progress began before now: it is drawn from now.
    const from = Date.parse(w.from) > Date.parse(plan.now) ? w.from : plan.now;
    const to = Date.parse(w.until) < Date.parse(plan.until) ? w.until : plan.until;
    const now = w.in_progress ? " (in progress)" : "";
    root.append(tlTitle(svg("rect", { x: x(from), y: 0, width: Math.max(1, x(to) - x(from)), height: TL.lane,
                                      class: "band band-limit_paused", "data-plan": "wait", "data-window": w.window,
                                      "data-from": w.from, "data-to": w.until, "data-in-progress": !!w.in_progress }),
                        `${w.window} limit ${localTime(w.from)}–${localTime(w.until)}${now}`));
  }
  // What each session waits on now ends at a mark: a resume, a breaker's try, a retry, a start.
  for (const w of plan.waiting || []) {
    if (!w.until || Date.parse(w.until) > Date.parse(plan.until)) continue;
    const px = Math.max(TL.left, x(w.until));
    const mark = svg("path", { d: `M${px} ${TL.lane - 2} l4 -5 h-8 z`, class: `mark mark-${w.on}`, "data-plan": "waiting",
                               "data-session": w.session, "data-on": w.on, "data-at": w.until });
    root.append(tlTitle(mark, `${w.session}: ${w.then} at ${localTime(w.until)} (${w.on})`));
  }
  // The wake alarm Nightshift set for the sleep it allowed.
  if (plan.asleep && Date.parse(plan.asleep.wakes_at) <= Date.parse(plan.until)) {
    const px = x(plan.asleep.wakes_at);
    root.append(tlTitle(svg("line", { x1: px, x2: px, y1: 0, y2: TL.lane, class: "tick wake-alarm", "data-plan": "wake",
                                      "data-at": plan.asleep.wakes_at }),
                        `allowed to sleep since ${localTime(plan.asleep.since)}; wake alarm ${localTime(plan.asleep.wakes_at)}`));
  }
  figure.prepend(root);
}
