"""A screenshot's PNG made small without an image library: Chromium writes 24-bit RGB,
quickly compressed; a page of flat colours and anti-aliased text has a few thousand
colours, but 256 of them cover about 99% of the pixels. The picture is rewritten with
those 256 as its palette (each other colour as its nearest of them: the edges of
letters) and compressed at zlib's best, which takes it to about a third of its size.

Reads only what Chromium writes: 8-bit RGB or RGBA (alpha dropped), not interlaced.
"""
from __future__ import annotations

import struct
import zlib
from collections import Counter

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunks(png: bytes):
    if not png.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    at = len(SIGNATURE)
    while at < len(png):
        (size,) = struct.unpack(">I", png[at:at + 4])
        yield png[at + 4:at + 8], png[at + 8:at + 8 + size]
        at += 12 + size


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, each row's RGB bytes)."""
    data = b""
    for kind, body in _chunks(png):
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {color})")
        elif kind == b"IDAT":
            data += body
    raw = zlib.decompress(data)
    bpp = 3 if color == 2 else 4
    stride = width * bpp
    rows, prev, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, row = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        if kind == 1:    # sub
            for x in range(bpp, stride):
                row[x] = (row[x] + row[x - bpp]) & 255
        elif kind == 2:  # up
            row = bytearray((r + p) & 255 for r, p in zip(row, prev))
        elif kind == 3:  # average
            for x in range(stride):
                row[x] = (row[x] + ((row[x - bpp] if x >= bpp else 0) + prev[x]) // 2) & 255
        elif kind == 4:  # paeth
            for x in range(stride):
                left = x >= bpp
                row[x] = (row[x] + _paeth(row[x - bpp] if left else 0, prev[x],
                                          prev[x - bpp] if left else 0)) & 255
        prev = row
        if bpp == 4:  # (a copy: `prev` is the row unfiltered, alpha and all)
            row = bytearray(b for i, b in enumerate(row) if i % 4 != 3)
        rows.append(bytes(row))
    return width, height, rows


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body)
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def smaller(png: bytes) -> bytes:
    """`png` with a palette of its 256 commonest colours, compressed at level 9."""
    width, height, rows = pixels(png)
    seen = Counter(row[i:i + 3] for row in rows for i in range(0, len(row), 3))
    palette = [c for c, _ in seen.most_common(256)]
    index = {c: i for i, c in enumerate(palette)}
    for c in seen:
        if c not in index:  # the nearest colour of the palette (squared RGB distance)
            r, g, b = c
            index[c] = min(range(len(palette)), key=lambda i: (palette[i][0] - r) ** 2 + (
                palette[i][1] - g) ** 2 + (palette[i][2] - b) ** 2)
    raw = b"".join(b"\0" + bytes(index[row[i:i + 3]] for i in range(0, len(row), 3))
                   for row in rows)
    return (SIGNATURE
            + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0))
            + _chunk(b"PLTE", b"".join(palette))
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))
