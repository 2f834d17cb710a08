"""The unwinder's AArch64 side on a real AArch64 binary's call frame information (no
AArch64 capture can be recorded here: tests/fixtures/aarch64/README.md). A leaf that keeps
its return address in the link register (x30, `.ra: x30`), then two functions whose
prologues saved x29/x30 on the stack, walked over a stack laid out by those rules."""
import struct

from analysis.symbols.index_cache import file_sha256
from analysis.unwind.cfi import REGISTERS, table_for
from analysis.unwind.walker import PERF_BITS, Space, registers, walk
from conftest import FIXTURES

SO = FIXTURES / "aarch64" / "_speedups.cpython-311-aarch64-linux-gnu.so"
BASE = 0x7F0000000000  # where the library is mapped (file offset 0 at BASE)


def _table():
    return table_for(str(SO), file_sha256(SO), "aarch64")


def test_the_rules_read_as_the_psabi_says():
    t = _table()
    leaf = t.lookup(0x6D0)  # INIT 6d0: .cfa: sp 0 + .ra: x30
    names = REGISTERS["aarch64"]
    assert leaf[0] == (0, names.index("sp"), 0) and leaf[1] == (0, names.index("x30"), 0)
    body = t.lookup(0x760)  # after `stp x29, x30, [sp, #-32]!` at 0x740
    assert body[0] == (0, names.index("sp"), 32)
    assert body[1] == (1, -1, -24)  # the return address at CFA - 24
    assert dict(body[2])[names.index("x29")] == (1, -1, -32)
    assert t.lookup(0x7A8)[0] == (0, names.index("sp"), 128)
    assert t.lookup(0x10000) is None  # past the text: no rule


def test_a_walk_through_the_link_register_and_two_saved_frames():
    t = _table()
    sp0 = 0x7FFF_F000_0000
    stack = bytearray(256)
    # frame of the function at 0x740 (CFA = sp0 + 32): x29 at CFA-32, x30 at CFA-24
    struct.pack_into("<QQ", stack, 0, 0x1111, BASE + 0x7A8)
    # frame of the function at 0x7a0 (CFA = sp0 + 32 + 128): x29 at CFA-128, x30 at
    # CFA-120 is 0: the end
    struct.pack_into("<QQ", stack, 32, 0x2222, 0)
    values = [0] * 33
    values[31], values[32] = sp0, BASE + 0x6D0  # sp, pc: in the leaf at 0x6d0
    values[30] = BASE + 0x760  # lr: the leaf was called from 0x75c
    mask = (1 << 33) - 1
    regs = registers("aarch64", mask, tuple(values))
    assert PERF_BITS["aarch64"][31] == 31 and regs[31] == sp0
    space = Space(((BASE, BASE + 0x2000, 0, "/x/_speedups.so", ""),),
                  lambda row: (t, lambda off: off))
    assert walk("aarch64", regs, bytes(stack), space) == [BASE + 0x760, BASE + 0x7A8]
