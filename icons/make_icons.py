#!/usr/bin/env python3
"""Draws Nightshift's icons (a crescent moon) as RGBA PNGs with the standard library only.

Run from the repository root: python3 icons/make_icons.py. The PNGs are committed; this script is
how they were made and how to change them.
"""
import struct
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent
SS = 4  # supersampling per axis, for smooth edges


def png(width, height, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * width * 4:(y + 1) * width * 4]) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def hexrgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def draw(size, moon, background=None, dot=None):
    """A crescent in `moon` colour, on an optional rounded-square background, with an optional dot."""
    px = bytearray(size * size * 4)
    for y in range(size):
        for x in range(size):
            cover_bg = cover_moon = cover_dot = 0
            for sy in range(SS):
                for sx in range(SS):
                    u = (x + (sx + 0.5) / SS) / size
                    v = (y + (sy + 0.5) / SS) / size
                    if background:
                        r = 0.22
                        dx = max(abs(u - 0.5) - (0.5 - r), 0)
                        dy = max(abs(v - 0.5) - (0.5 - r), 0)
                        cover_bg += dx * dx + dy * dy <= r * r
                    inside = (u - 0.46) ** 2 + (v - 0.52) ** 2 <= 0.36 ** 2
                    bite = (u - 0.64) ** 2 + (v - 0.40) ** 2 <= 0.30 ** 2
                    cover_moon += inside and not bite
                    if dot:
                        cover_dot += (u - 0.78) ** 2 + (v - 0.78) ** 2 <= 0.17 ** 2
            n = SS * SS
            layers = []
            if background:
                layers.append((hexrgb(background), cover_bg / n))
            layers.append((hexrgb(moon), cover_moon / n))
            if dot:
                layers.append((hexrgb(dot), cover_dot / n))
            r = g = b = a = 0.0  # premultiplied
            for (cr, cg, cb), alpha in layers:  # "over" compositing, bottom layer first
                r = cr * alpha + r * (1 - alpha)
                g = cg * alpha + g * (1 - alpha)
                b = cb * alpha + b * (1 - alpha)
                a = alpha + a * (1 - alpha)
            if a > 0:
                i = (y * size + x) * 4
                px[i:i + 4] = bytes((round(r / a), round(g / a), round(b / a), round(a * 255)))
    return png(size, size, px)


STATES = {
    "idle": ("#a3acbf", None),
    "working": ("#6ea8ff", "#3ccf7a"),
    "paused": ("#f5b642", None),
    "attention": ("#ff5c5c", "#ffd43b"),
}

if __name__ == "__main__":
    for size, name in ((32, "32x32.png"), (128, "128x128.png"), (512, "icon.png")):
        (OUT / name).write_bytes(draw(size, "#f3d27a", background="#1e2240"))
    # The sizes launchers and menus pick from the hicolor theme (48x48 is the one the spec asks for).
    (OUT / "hicolor").mkdir(exist_ok=True)
    for size in (16, 48, 64, 256):
        (OUT / "hicolor" / f"{size}x{size}.png").write_bytes(draw(size, "#f3d27a", background="#1e2240"))
    for state, (colour, dot) in STATES.items():
        (OUT / f"tray-{state}.png").write_bytes(draw(64, colour, dot=dot))
    print("icons written to", OUT)
