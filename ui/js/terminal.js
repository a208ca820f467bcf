// A session page's live terminal: xterm.js (ui/vendor, pinned from npm by `make ui-vendor`) fed with
// the session's output on a channel — the whole screen at once, then the bytes as they come. It
// watches at the session's own size; "Take over" gives it the keyboard and the window's size (what
// it types counts as you typing, so respawn holds off), "Release" gives both back. xterm.js is a
// classic script of globals, loaded before the modules (index.html): read as `window.Terminal` and
// `window.FitAddon`.

import { $, call } from "./core.js";

// xterm.js puts some of its rules in <style> elements and a cell's true colour in a style
// attribute; the window's content security policy (style-src 'self') refuses both. The same rules
// through the CSS object model are allowed: a <style> element's text becomes a stylesheet of its
// own, adopted until the element is removed, and a style attribute set from a script becomes the
// element's inline style. Markup still cannot carry styles of its own.
(function styleThroughTheObjectModel() {
  const setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    if (name === "style" && this instanceof HTMLElement) {
      this.style.cssText = String(value);
      return;
    }
    setAttribute.call(this, name, value);
  };
  // A <style> element is asked for: what is made is an element of no meaning that holds the rules
  // (so the policy has no element to refuse), and the rules go in as a stylesheet.
  const createElement = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    if (String(tag).toLowerCase() !== "style") return createElement.call(this, tag, options);
    const node = createElement.call(this, "nightshift-style");
    node.hidden = true;
    adoptStyle(node);
    return node;
  };
  function adoptStyle(node) {
    const sheet = new CSSStyleSheet();
    let text = "";
    const keep = () => {
      if (!document.adoptedStyleSheets.includes(sheet)) document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    };
    for (const prop of ["textContent", "innerText"]) {
      Object.defineProperty(node, prop, {
        configurable: true,
        get: () => text,
        set: (value) => { text = String(value ?? ""); sheet.replaceSync(text); keep(); },
      });
    }
    node.remove = function () {
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
      Element.prototype.remove.call(this);
    };
  }
})();

// The open page's terminal; one at a time.
const term = {
  xterm: null,
  fit: null,
  viewer: null,       // the app's number for the attachment
  session: null,
  takenOver: false,
  ended: false,
  drawn: 0,           // bytes drawn and not yet reported
  drawnTimer: null,
  resizeObserver: null,
};

// The session whose terminal is open, if one is.
export function terminalSession() {
  return term.session;
}

function terminalTheme() {
  const css = getComputedStyle(document.documentElement);
  return { background: css.getPropertyValue("--screen-bg").trim() || "#1b1d2b",
           foreground: css.getPropertyValue("--screen-fg").trim() || "#e4e6f0" };
}

// An xterm.js terminal in the window's colours that takes no keys (the live one gets them on Take
// over; a replay never does), opened in `box`.
export function newTerminal(box, options = {}) {
  const x = new window.Terminal({
    disableStdin: true, cursorBlink: false, scrollback: 2000, fontSize: 13, theme: terminalTheme(),
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace', ...options,
  });
  return x;
}

// Attaches the page's terminal to session `id` (a live terminal session).
export async function openTerminal(id) {
  closeTerminal();
  const box = $("terminal");
  box.hidden = false;
  const x = newTerminal(box);
  const fit = new window.FitAddon.FitAddon();
  x.loadAddon(fit);
  x.open(box);
  Object.assign(term, { xterm: x, fit, session: id, viewer: null, takenOver: false, ended: false, drawn: 0 });
  x.onData((data) => { if (term.takenOver && term.viewer !== null) call("terminal_keys", { viewer: term.viewer, data }); });
  x.onResize(({ cols, rows }) => {
    if (term.takenOver && term.viewer !== null) call("terminal_resize", { viewer: term.viewer, cols, rows });
  });
  term.resizeObserver = new ResizeObserver(() => { if (term.takenOver) fit.fit(); });
  term.resizeObserver.observe(box);
  renderTakeOver();

  const channel = new window.__TAURI__.core.Channel();
  channel.onmessage = (message) => { if (term.xterm === x) heard(message); };
  const got = await call("terminal_open", { id, output: channel }, { quietCodes: ["not_running", "no_session"] });
  if (term.xterm !== x) {
    if (got.ok) call("terminal_close", { viewer: got.value });
    return;
  }
  if (!got.ok) { terminalGone("The agent is not running, so there is no terminal to show. Its journal is below."); return; }
  term.viewer = got.value;
  renderTakeOver();
}

function heard(message) {
  const x = term.xterm;
  if (message instanceof ArrayBuffer) {
    const bytes = new Uint8Array(message);
    x.write(bytes, () => drawn(bytes.length));
  } else if (message.size) {
    // A whole screen drawn at this size follows.
    x.reset();
    x.resize(message.size[0], message.size[1]);
    $("terminal").dataset.size = `${message.size[0]}x${message.size[1]}`;
  } else if (message.ended) {
    terminalGone(`The session's terminal closed: ${message.ended}.`);
  }
}

// The app stops sending output while much of it is not drawn yet; say what is drawn, now and then.
function drawn(bytes) {
  term.drawn += bytes;
  if (term.drawnTimer) return;
  term.drawnTimer = setTimeout(() => {
    term.drawnTimer = null;
    // The first screen can be drawn before the app has said the viewer's number: said once it has.
    if (term.viewer === null) { if (term.xterm && !term.ended) drawn(0); return; }
    if (term.drawn) call("terminal_drawn", { viewer: term.viewer, bytes: term.drawn }, { quietCodes: ["terminal_closed"] });
    term.drawn = 0;
  }, 20);
}

function terminalGone(text) {
  term.ended = true;
  term.takenOver = false;
  if (term.xterm) term.xterm.options.disableStdin = true;
  $("screen-note").textContent = text;
  $("screen-note").hidden = false;
  renderTakeOver();
}

export function closeTerminal() {
  if (term.viewer !== null) call("terminal_close", { viewer: term.viewer });
  if (term.resizeObserver) term.resizeObserver.disconnect();
  if (term.xterm) term.xterm.dispose();
  clearTimeout(term.drawnTimer);
  Object.assign(term, { xterm: null, fit: null, viewer: null, session: null, takenOver: false, ended: false,
                        drawn: 0, drawnTimer: null, resizeObserver: null });
  $("terminal").hidden = true;
  renderTakeOver();
}

export function takeOver() {
  if (!term.xterm || term.viewer === null || term.ended) return;
  term.takenOver = true;
  term.xterm.options.disableStdin = false;
  term.fit.fit();
  // The window's size, even when the fit left it as it was.
  call("terminal_resize", { viewer: term.viewer, cols: term.xterm.cols, rows: term.xterm.rows });
  renderTakeOver();
  term.xterm.focus();
}

export function release() {
  if (!term.xterm) return;
  term.takenOver = false;
  term.xterm.options.disableStdin = true;
  term.xterm.blur();
  renderTakeOver();
  $("take-over").focus();
}

function renderTakeOver() {
  const live = !!term.xterm && term.viewer !== null && !term.ended;
  $("take-over").hidden = !live || term.takenOver;
  $("release").hidden = !live || !term.takenOver;
  $("terminal").dataset.mode = term.takenOver ? "typing" : "watching";
  $("terminal-hint").textContent = !live ? ""
    : term.takenOver ? "Your keys go to the agent, and the session takes this window's size. Respawn waits 30 seconds after you type."
      : "Watching. Take over to type into the agent.";
}

// Brings the terminal into view with the agent's latest screen (its dialog, when it asks).
export function focusTerminal() {
  if (!term.xterm) return;
  term.xterm.scrollToBottom();
  $("terminal").scrollIntoView({ block: "center" });
  term.xterm.focus();
}
