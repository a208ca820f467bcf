// The away digest and the morning summary as a view, drawn from the typed digest (never its text):
// per session a card of what it did, then what needs you, each row with the action that answers it
// (resume, answer, show or restore the kept work, reset the breaker, look at the commits) and
// Dismiss. What needs you comes first; what happened that needed nothing is folded away.

import { call, clearError, el, notice, plural, refreshSoon, span } from "./core.js";
import { openSession } from "./session.js";
import { focusTerminal } from "./terminal.js";

const SECTIONS = { needs_you: "Needs you", still_running: "Still running", idle: "Idle", done: "Done" };
const ORDER = ["needs_you", "still_running", "idle", "done"];

// `digest` as cards in `container`; `reload` draws it again after an action changed something.
export function renderCards(container, digest, reload) {
  const sessions = (digest && digest.sessions) || [];
  if (!sessions.length) {
    container.replaceChildren(el("p", { class: "hint" }, "Nothing happened in this range."));
    return;
  }
  const sorted = [...sessions].sort((a, b) => ORDER.indexOf(a.section) - ORDER.indexOf(b.section));
  container.replaceChildren(...sorted.map((s) => card(s, reload)));
}

function card(s, reload) {
  // A summary stored by an older Nightshift has the texts only: rows that open the session.
  const typed = s.needs && s.needs.length ? s.needs : (s.needs_you || []).map((text) => ({ kind: "note", text, key: "" }));
  const needs = typed.filter((n) => !n.dismissed);
  const section = needs.length ? "needs_you" : s.section === "needs_you" ? "done" : s.section;
  const title = el("h3", {},
    el("button", { type: "button", class: "link", "data-open": s.id, title: "Open the session" }, s.id),
    el("span", { class: `section section-${section}` }, SECTIONS[section] || section));
  const where = el("p", { class: "hint card-where", title: s.command_line }, `${s.agent} · ${s.cwd} · ${s.state}`);
  const body = [title, where, did(s)];
  for (const u of s.unusual || []) body.push(el("p", { class: "unusual" }, `Unusual: ${u.text}`));
  if (needs.length) {
    body.push(el("ul", { class: "needs", "aria-label": `What session ${s.id} needs of you` },
      ...needs.map((n) => needRow(s, n, reload))));
  }
  const happened = s.happened || [];
  if (happened.length) {
    body.push(el("details", { class: "happened" },
      el("summary", {}, `What happened that needs nothing now (${happened.length})`),
      el("ul", {}, ...happened.map((h) => el("li", {}, h.text)))));
  }
  if (s.recording) {
    // Its recorded lives: the last one played back on its page.
    const replay = el("button", { type: "button", "data-replay": s.id, title: s.recording }, "Replay");
    replay.addEventListener("click", async () => {
      await openSession(s.id);
      const player = document.getElementById("replay");
      if (!player.hidden) player.scrollIntoView({ block: "start" });
    });
    title.append(replay);
  }
  const node = el("article", { class: `card card-${section}`, "data-session": s.id }, ...body);
  node.querySelector("[data-open]").addEventListener("click", () => openSession(s.id));
  return node;
}

// What it did: its commits with their subjects, the change, the cost and the time.
function did(s) {
  const items = [];
  const g = s.git;
  if (g && g.commits.length) {
    const shown = g.commits.slice(0, 5).map((c) => el("li", { class: "commit" },
      el("code", {}, c.hash.slice(0, 8)), " ", c.subject));
    if (g.commits.length > 5) shown.push(el("li", { class: "hint" }, `and ${g.commits.length - 5} more`));
    items.push(el("li", {}, plural(g.commits.length, "commit", "commits"),
      ` (${g.committed.files} files, +${g.committed.insertions} −${g.committed.deletions})`, el("ul", {}, ...shown)));
  } else {
    items.push(el("li", {}, "no commits"));
  }
  if (g && (g.uncommitted.files || g.untracked)) {
    items.push(el("li", {}, `not committed: ${g.uncommitted.files} changed file(s), ${g.untracked} untracked`));
  }
  const cost = (s.usage ? s.usage.cost_usd : 0) + (s.loop_cost_usd || 0);
  const time = [`working ${span(s.working_secs)}`, `idle ${span(s.idle_secs)}`];
  if (s.paused_secs) time.push(`paused on limits ${span(s.paused_secs)}`);
  if (cost) time.push(`$${cost.toFixed(2)}`);
  items.push(el("li", {}, time.join(" · ")));
  const counted = [[s.respawn_cycles, "respawn cycle", "respawn cycles"], [s.restarts, "restart", "restarts"],
    [s.limits_hit, "usage limit", "usage limits"], [s.breaker_trips, "breaker trip", "breaker trips"]]
    .filter(([n]) => n).map(([n, one, many]) => plural(n, one, many));
  if (counted.length) items.push(el("li", {}, counted.join(" · ")));
  // Who did what, when the work moved between accounts or agents: each one's stretch, commits and
  // spend, and how far it filled its own account's windows.
  if ((s.workers || []).length) {
    items.push(el("li", { class: "workers" }, "who worked:", el("ul", {}, ...s.workers.map(worker))));
  }
  for (const w of s.worktrees || []) {
    items.push(el("li", { class: "worktree", "data-branch": w.branch },
      "worktree ", el("code", {}, w.branch), `${w.task ? ` (task: ${w.task})` : ""}: ${w.work}`,
      el("div", { class: "hint" }, "look: ", el("code", {}, w.look), " · merge: ", el("code", {}, w.merge))));
  }
  return el("ul", { class: "did" }, ...items);
}

// One worker's share: "codex 01:00–03:00 · 1 commit · 18000 tokens · 5h 3% → 20%".
function worker(w) {
  const at = (t) => new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const parts = [`${at(w.from)}–${at(w.to)}`, plural(w.commits.length, "commit", "commits")];
  const u = w.usage;
  if (u) {
    if (u.cost_reported) parts.push(`$${u.cost_usd.toFixed(2)}`);
    if (u.tokens) parts.push(`${u.tokens} tokens`);
    const pct = (a, b) => (a == null || b == null ? null : `${Math.round(a)}% → ${Math.round(b)}%`);
    const five = pct(u.five_hour_from, u.five_hour_to);
    const seven = pct(u.seven_day_from, u.seven_day_to);
    if (five) parts.push(`5h ${five}`);
    if (seven) parts.push(`7d ${seven}`);
  }
  const who = w.account ? `${w.agent} (account ${w.account})` : w.agent;
  return el("li", { class: "worker", "data-agent": w.agent, title: w.commits.map((c) => c.subject).join("\n") },
    el("strong", {}, who), ` ${parts.join(" · ")}`,
    ...(w.took_over ? [el("div", { class: "hint took-over" }, w.took_over)] : []));
}

// One row of what needs you: what it is, its actions, and Dismiss.
function needRow(s, n, reload) {
  const row = el("li", { class: `need need-${n.kind}`, "data-need": n.kind });
  const out = el("pre", { class: "need-out prose", hidden: true });
  const button = (label, action, what) => {
    const b = el("button", { type: "button", "data-action": action, title: what || label }, label);
    b.addEventListener("click", async () => {
      clearError();
      b.disabled = true;
      try { await ACTIONS[action](s, n, out, reload); } finally { b.disabled = false; }
    });
    return b;
  };
  const actions = [];
  switch (n.kind) {
    case "question": actions.push(button("Answer", "answer", "Open its terminal, on the dialog")); break;
    case "breaker": actions.push(button("Reset the breaker", "reset")); break;
    case "lost": actions.push(button("Resume this conversation", "resume")); break;
    case "crashed":
      // Only a client that named its conversation can carry it on (the core says whether it did).
      actions.push(n.resume ? button("Resume this conversation", "resume") : button("Open the session", "open"));
      break;
    case "kept": actions.push(button("Resume now", "resume", "Resume it in this app now")); break;
    case "salvage":
      actions.push(button("Show the work", "show"), button("Restore onto a branch", "restore",
        "Put the kept work on a new branch; your working tree and branches stay as they are"));
      break;
    case "delivery": actions.push(button("Show the commits", "commits")); break;
    default: actions.push(button("Open the session", "open"));
  }
  if (n.key) actions.push(button("Dismiss", "dismiss", "It needs you no more: leave it out of the digest"));
  row.append(el("span", { class: "need-text" }, n.text), el("span", { class: "need-actions" }, ...actions), out);
  return row;
}

const ACTIONS = {
  async answer(s) {
    await openSession(s.id);
    focusTerminal();
  },
  async open(s) {
    await openSession(s.id);
  },
  async reset(s, n, out, reload) {
    const got = await call("reset_breaker", { id: s.id });
    if (!got.ok) return;
    notice(`Session ${s.id}: ${got.value}.`);
    reload();
  },
  async resume(s) {
    const got = await call("resume_session", { id: s.id });
    if (!got.ok) return;
    const id = got.value;
    notice(id === s.id ? `Session ${id} runs again, on its own conversation.`
      : `Session ${s.id}'s conversation goes on in session ${id}.`);
    refreshSoon();
    await openSession(id);
  },
  async show(s, n, out) {
    if (!out.hidden) { out.hidden = true; return; }
    const got = await call("salvage_show", { repo: n.repo, reference: n.reference });
    if (!got.ok) return;
    out.textContent = got.value;
    out.hidden = false;
  },
  async restore(s, n) {
    const got = await call("salvage_restore", { repo: n.repo, reference: n.reference });
    if (!got.ok) return;
    notice(`Branch ${got.value} in ${n.repo} now holds the kept work; your working tree is as it was.`, true);
  },
  async commits(s, n, out) {
    if (!out.hidden) { out.hidden = true; return; }
    const d = s.delivery || {};
    const lines = (d.unpushed || []).map((c) => `${c.hash.slice(0, 8)} ${c.subject}`);
    if (d.behind) lines.push(`${d.upstream || "its upstream"} has ${plural(d.behind, "commit", "commits")} the branch lacks`);
    out.textContent = lines.join("\n") || n.text;
    out.hidden = false;
  },
  async dismiss(s, n, out, reload) {
    const got = await call("dismiss_need", { session: s.id, key: n.key });
    if (!got.ok) return;
    notice("Dismissed: it needs you no more.");
    reload();
  },
};

