// The Sessions view's worktrees: each branch a session or loop worked on in a folder of its own,
// where its work stands, how to look at it or merge it, and Remove (refused while it would lose
// work; "Remove anyway" keeps its uncommitted files under a salvage ref and its branch).

import { $, call, clearError, el, notice } from "./core.js";

// Git is asked about every worktree: not more often than this.
const EVERY_MS = 15000;
let loaded = 0;
// Removals refused, by worktree: why, kept across redraws until it is removed or the app restarts.
const refused = new Map();

export async function loadWorktrees(force = false) {
  if (!force && Date.now() - loaded < EVERY_MS) return;
  loaded = Date.now();
  const got = await call("worktrees");
  if (!got.ok) return;
  const rows = got.value;
  $("worktrees").hidden = rows.length === 0;
  $("worktrees-table").querySelector("tbody").replaceChildren(...rows.map(row));
}

function row(w) {
  const said = el("p", { class: "worktree-said", role: "status" });
  const actions = el("td", { class: "actions" });
  const remove = (force) => {
    const b = el("button", { type: "button", class: force ? "danger" : "", "data-action": force ? "force" : "remove",
      title: force ? "Its uncommitted files are kept under a salvage ref first, and a branch with commits is kept"
        : "Remove its folder; refused while it holds work that would be lost" },
    force ? "Remove anyway" : "Remove");
    b.addEventListener("click", async () => {
      clearError();
      b.disabled = true;
      const got = await call("remove_worktree", { name: w.name, force }, { quietCodes: ["worktree_at_risk"] });
      b.disabled = false;
      if (got.ok) {
        refused.delete(w.name);
        notice(got.value);
        await loadWorktrees(true);
      } else if (got.error.code === "worktree_at_risk") {
        refused.set(w.name, got.error.message);
        showRefused();
      }
    });
    return b;
  };
  const showRefused = () => {
    const why = refused.get(w.name);
    said.hidden = !why;
    said.textContent = why || "";
    if (why && !actions.querySelector("[data-action=force]")) actions.append(remove(true));
  };
  actions.append(remove(false));
  showRefused();
  const work = el("td", {}, w.work);
  if (w.task) work.append(el("div", { class: "hint" }, `task: ${w.task}`));
  work.append(el("details", { class: "worktree-how" }, el("summary", {}, "Look at it or merge it"),
    el("code", {}, w.look), el("code", {}, w.merge)), said);
  return el("tr", { "data-worktree": w.name, "data-session-id": w.session },
    el("td", { class: "mono" }, w.branch), work, el("td", { class: "wide cwd", title: w.path }, w.path), actions);
}
