"""The edits every fuzz target's inputs are made with, from real files: flipped bytes,
truncation, ranges cut out, repeated or spliced in from another file, bytes and separators
put in, and numbers set to what breaks size, count and offset arithmetic (the ends of each
width, just past a 16- or 32-bit field, a little off the number that was there). The
choices come from hypothesis (tests/fuzz/test_fuzz.py, which shrinks what it finds) or a
seeded random.Random (tests/fuzz/native: a million inputs without hypothesis' cost per
example); shapes.py adds edits that know a format's structure."""
from __future__ import annotations

import struct

from hypothesis import strategies as st

#: values a length, count or offset is set to: the ends of each width, and just past
#: what a size field of 16 or 32 bits can say
ABSURD = [0, 1, 8, 0x7F, 0xFF, 0x7FFF, 0xFFFF, 0xFFF8, 0x10000, 0x7FFFFFFF, 0x80000000,
          0xFFFFFFF8, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000,
          0xFFFFFFFFFFFFFFF8, 0xFFFFFFFFFFFFFFFF]
#: what a number is changed by (a size one record too long or short)
NUDGES = [-8, -1, 1, 8, 0x10000, -0x10000, 1 << 32]
FORMATS = ["<I", "<Q", ">I", "<H", ">Q"]
MARKS = [b"\n", b"\t", b" ", b";", b":", b"(", b")", b"[", b"]", b"0x", b"%", b"\x00"]


class Choices:
    """Where a mutation's choices come from: hypothesis' `draw` (the pytest fuzz tests,
    which shrink what they find) or a seeded random.Random (the sanitized run of
    tests/fuzz/native, a million inputs without hypothesis' cost per example)."""

    def __init__(self, draw=None, rng=None) -> None:
        self.draw, self.rng = draw, rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi) if self.draw is None else \
            self.draw(st.integers(lo, hi))

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def blob(self, lo: int, hi: int) -> bytes:
        return self.rng.randbytes(self.rng.randint(lo, hi)) if self.draw is None else \
            self.draw(st.binary(min_size=lo, max_size=hi))


def put(data: bytearray, at: int, fmt: str, value: int) -> None:
    packed = struct.pack(fmt, value & ((1 << (8 * struct.calcsize(fmt))) - 1))
    data[at:at + len(packed)] = packed


def mutate(data: bytes, seeds: list[bytes], c: Choices, shape=None) -> bytes:
    """Up to 8 edits of `data`, each a generic one or, given a `shape` (shapes.py), in
    `shape.share` percent of them one that knows the format's structure; then the
    shape's last step (e.g. compressing a perf.data's records)."""
    data = bytearray(data)
    for _ in range(c.int(0, 8)):
        if not data:
            data += c.blob(0, 64)
            continue
        if shape is not None and c.int(0, 99) < shape.share:
            data = shape.edit(data, c)
            continue
        op = c.int(0, 10)
        at = c.int(0, len(data) - 1)
        if op == 0:  # flip a byte
            data[at] ^= c.int(1, 255)
        elif op == 1:  # an absurd 16-, 32- or 64-bit number (sizes, counts, offsets)
            put(data, at, c.pick(FORMATS), c.pick(ABSURD))
        elif op == 2:  # truncate
            del data[at:]
        elif op == 3:  # cut a range out
            del data[at:at + c.int(1, 4096)]
        elif op == 4:  # repeat a range
            chunk = data[at:at + c.int(1, 512)]
            data[at:at] = chunk * c.int(1, 4)
        elif op == 5:  # random bytes in
            data[at:at] = c.blob(1, 64)
        elif op == 6:  # text-level: a line break or a separator where it was not
            data[at:at] = c.pick(MARKS)
        elif op == 7:  # an absurd number where binary formats keep theirs (8-aligned)
            put(data, at & ~7, c.pick(FORMATS), c.pick(ABSURD))
        elif op == 8:  # a number off by a little (a size one record too long)
            fmt = c.pick(FORMATS)
            at &= ~(struct.calcsize(fmt) - 1)
            if at + struct.calcsize(fmt) <= len(data):
                (old,) = struct.unpack_from(fmt, data, at)
                put(data, at, fmt, old + c.pick(NUDGES))
        elif op == 9:  # a range of another seed spliced in
            other = c.pick(seeds)
            if other:
                src = c.int(0, len(other) - 1)
                data[at:at + c.int(0, 64)] = other[src:src + c.int(1, 4096)]
        else:  # a number written in decimal where text keeps its numbers
            data[at:at] = str(c.pick(ABSURD + [-1, 10**20, -(10**20)])).encode()
    return bytes(shape.finish(data, c) if shape is not None else data)
