"""What a window manager does to the app's window, done over the X protocol (python3-xlib): find a
top-level window by title, ask it to close (WM_DELETE_WINDOW), read whether it is mapped. Xvfb runs
no window manager, so the test speaks for one."""

import time

from Xlib import X, display, protocol


class X11:
    def __init__(self):
        self.d = display.Display()
        self.root = self.d.screen().root
        self.WM_PROTOCOLS = self.d.intern_atom("WM_PROTOCOLS")
        self.WM_DELETE_WINDOW = self.d.intern_atom("WM_DELETE_WINDOW")
        self.NET_WM_NAME = self.d.intern_atom("_NET_WM_NAME")
        self.UTF8 = self.d.intern_atom("UTF8_STRING")

    def _title(self, w):
        try:
            prop = w.get_full_property(self.NET_WM_NAME, self.UTF8)
            if prop:
                return prop.value.decode("utf-8", "replace")
            return w.get_wm_name()
        except Exception:
            return None

    def find(self, title, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            stack = [self.root]
            while stack:
                w = stack.pop()
                try:
                    stack.extend(w.query_tree().children)
                except Exception:
                    continue
                if self._title(w) == title and self.WM_DELETE_WINDOW in (w.get_wm_protocols() or []):
                    return w
            time.sleep(0.1)
        raise AssertionError(f"no X window titled {title!r}")

    def request_close(self, w):
        """The ICCCM close request a window manager sends when the user clicks the close button."""
        ev = protocol.event.ClientMessage(window=w, client_type=self.WM_PROTOCOLS,
                                          data=(32, [self.WM_DELETE_WINDOW, X.CurrentTime, 0, 0, 0]))
        w.send_event(ev, event_mask=X.NoEventMask)
        self.d.flush()

    def is_viewable(self, w):
        return w.get_attributes().map_state == X.IsViewable
