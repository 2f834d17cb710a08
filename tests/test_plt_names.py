"""PLT stubs (tests/fixtures/plt: pltcall calls labs through its PLT 400 million times;
Makefile and pltcall.c). perf report on the recording host names the stub `_init`
(pltcall.truth-report.txt: 38.89%), the function before the PLT, because gcc 12's
binaries put the stubs in .plt.sec, which perf 6.1 does not synthesize names for."""
from collections import Counter

from analysis.importers import load
from analysis.symbols import symbolize
from conftest import FIXTURES

HERE = FIXTURES / "plt"


def _leaves(files) -> dict[str, float]:
    p = load(HERE / "pltcall.perf.data")
    symbolize(p, [HERE / f for f in files])
    c = Counter(p.functions[p.locations[p.stacks[p.s_stack[r]][0]].functions[0]].name
                for r in range(len(p)))
    return {k: round(100 * v / len(p), 2) for k, v in c.items()}


def test_the_binary_names_its_stubs_name_at_plt():
    leaves = _leaves(["pltcall"])
    assert leaves["labs@plt"] == 38.89  # perf's "_init" share, under the right name
    assert leaves["through_plt"] == 15.29 and "_init" not in leaves


def test_a_debug_file_without_the_plt_says_plt_not_init():
    """objcopy --only-keep-debug keeps the section headers but not .rela.plt's contents:
    the stubs cannot be named, but they are in the PLT."""
    leaves = _leaves(["pltcall.debug"])
    assert leaves["[plt] in pltcall"] == 38.89 and "_init" not in leaves


def test_each_plt_entry_is_named_by_the_got_slot_it_jumps_through():
    """glibc's libc.so.6 lists its IRELATIVE slots (ifuncs, no symbol) last in .rela.plt
    while its PLT entries follow GOT order, so naming entries by relocation order (what
    perf 6.1 does) misnames them; each entry's own `jmp *GOT(%rip)` gives its slot, as
    objdump reads it. Truth: `objdump -d -j .plt` of the same file."""
    import re

    from analysis.symbols.elf import function_symbols

    libs = FIXTURES / "dwarf" / "system-libs"
    index, _ = function_symbols(str(libs / "libc.so.6"))
    truth = re.findall(r"^([0-9a-f]+) <(.*)>:$",
                       (libs / "libc.so.6.plt-objdump.txt").read_text(), re.M)
    assert len(truth) == 53
    assert {index.lookup(int(a, 16)) for a, _ in truth} == {n for _, n in truth}
    assert all(index.lookup(int(a, 16)) == n for a, n in truth)
    assert index.lookup(0x26010) == "*ABS*+0x9f550@plt"  # realloc's by relocation order
