// A recorded life played back in an xterm.js terminal on the session's page: play and pause, 1×, 4×
// or 16×, a seek bar with the journal's moments of that life as marks (a turn, a question, a limit,
// a cycle, a restart, a handoff). The core sends the frames on the playback's clock (long still
// stretches already cut) and each mark's second on it; this module only plays them.

import { $, app, call, el, isLive, localTime } from "./core.js";
import { newTerminal } from "./terminal.js";

const R = {
  session: null, cast: null, xterm: null, marks: [],
  next: 0,        // the first frame not drawn yet
  pos: 0,         // seconds into the playback
  playing: false, last: 0, frame: 0,
};

// Loads life `life` (the last when null) of `session` into the player; at `at` (a journal time), goes
// there. Hidden when the session has no recording.
export async function loadReplay(session, life = null, at = null) {
  stopReplay();
  const got = await call("session_replay", { id: session, life }, { quietCodes: ["no_recording"] });
  if (!got.ok) { $("replay").hidden = true; return; }
  const { lives, life: shown, cast, marks } = got.value;
  Object.assign(R, { session, cast, marks, next: 0, pos: 0 });
  $("replay-life").replaceChildren(...lives.map((n) => el("option", { value: String(n) }, `life ${n}`)));
  $("replay-life").value = String(shown);
  const box = $("replay-terminal");
  box.replaceChildren();
  // Shown before the terminal opens in it: xterm.js measures its cells when it opens.
  $("replay").hidden = false;
  R.xterm = newTerminal(box, { cols: cast.width, rows: cast.height, scrollback: 500 });
  R.xterm.open(box);
  // A life still going on is not closed yet either: it plays up to what was saved last.
  const s = app.sessions.find((x) => x.id === session);
  const live = !!s && isLive(s) && shown === lives[lives.length - 1];
  $("replay-note").hidden = !cast.cut_short;
  $("replay-note").textContent = !cast.cut_short ? ""
    : live ? "This life is still going on: it plays up to what was saved last (every few seconds)."
      : "This recording stops early: its Nightshift ended without closing it, so it plays up to its last save.";
  drawMarks();
  $("replay").dataset.ended = "false";
  $("replay").hidden = false;
  const mark = at && marks.filter((m) => m.at <= at).pop();
  seek(mark ? when(mark) : 0);
}

// The playback's clock: with still stretches cut (the core's `t`), or as the life went (`real`).
const cut = () => $("replay-cut").checked;
const when = (x) => (cut() ? x.t : x.real);
const duration = () => (R.cast.frames.length ? when(R.cast.frames[R.cast.frames.length - 1]) : 0);

export function cutChanged() {
  if (!R.cast) return;
  // The same moment on the other clock.
  const frame = R.cast.frames[Math.max(0, R.next - 1)];
  drawMarks();
  seek(frame && R.next ? when(frame) : 0);
}

export function stopReplay() {
  pause();
  if (R.xterm) { R.xterm.dispose(); R.xterm = null; }
  R.cast = null;
}

function drawMarks() {
  const box = $("replay-marks");
  const span = Math.max(duration(), 0.001);
  box.replaceChildren(...R.marks.map((m) => {
    const t = Math.min(when(m), span);
    const b = el("button", { type: "button", class: `replay-mark mark-${m.kind}`, role: "listitem",
                             "data-kind": m.kind, "data-t": String(t),
                             title: `${localTime(m.at)}: ${m.text}`, "aria-label": `${m.kind} at ${localTime(m.at)}: ${m.text}` });
    b.style.left = `${(100 * t) / span}%`;
    b.addEventListener("click", () => seek(t));
    return b;
  }));
}

// Draws the frames up to `t` seconds.
function drawTo(t) {
  const frames = R.cast.frames;
  let out = "";
  while (R.next < frames.length && when(frames[R.next]) <= t) {
    const f = frames[R.next++];
    if (f.kind === "o") { out += f.data; continue; }
    if (out) { R.xterm.write(out); out = ""; }
    const [cols, rows] = f.data.split("x").map(Number);
    if (cols > 0 && rows > 0) R.xterm.resize(cols, rows);
  }
  if (out) R.xterm.write(out);
  R.pos = t;
  showPosition();
}

// Goes to `t` seconds: the screen as it was then, drawn again from the start.
export function seek(t) {
  if (!R.cast) return;
  t = Math.max(0, Math.min(t, duration()));
  if (t < R.pos || t === 0) {
    R.xterm.reset();
    R.xterm.resize(R.cast.width, R.cast.height);
    R.next = 0;
  }
  drawTo(t);
  $("replay").dataset.ended = String(t >= duration());
}

function showPosition() {
  const d = duration();
  $("replay-seek").value = String(d ? Math.round((1000 * R.pos) / d) : 0);
  $("replay-seek").dataset.t = R.pos.toFixed(2);
  $("replay-clock").textContent = `${clockOf(R.pos)} / ${clockOf(d)}`;
}

function clockOf(secs) {
  const s = Math.floor(secs);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function play() {
  if (!R.cast) return;
  if (R.pos >= duration()) seek(0);
  R.playing = true;
  R.last = performance.now();
  $("replay-play").textContent = "Pause";
  $("replay-play").setAttribute("aria-pressed", "true");
  R.frame = requestAnimationFrame(step);
}

function pause() {
  R.playing = false;
  cancelAnimationFrame(R.frame);
  $("replay-play").textContent = "Play";
  $("replay-play").setAttribute("aria-pressed", "false");
}

function step(now) {
  if (!R.playing || !R.cast) return;
  const speed = Number($("replay-speed").value) || 1;
  const t = Math.min(R.pos + ((now - R.last) / 1000) * speed, duration());
  R.last = now;
  drawTo(t);
  if (t >= duration()) {
    pause();
    $("replay").dataset.ended = "true";
    return;
  }
  R.frame = requestAnimationFrame(step);
}

export function togglePlay() {
  if (R.playing) pause();
  else play();
}

export function seekBar() {
  if (!R.cast) return;
  seek((Number($("replay-seek").value) / 1000) * duration());
}

export function pickLife() {
  if (R.session) loadReplay(R.session, Number($("replay-life").value));
}
