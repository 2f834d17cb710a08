"""What symbolization needs from an ELF file: build-id, PT_LOAD segments, the debuglink,
whether it is a separate debug file, and its function symbols.

pyelftools reads the headers; the symbol tables themselves are decoded with
`struct.iter_unpack` straight from the mapped section bytes, because a library like
libtorch_cpu.so has hundreds of thousands of symbols and a Python object per symbol is
too slow (see symindex.py for the index they become).

Every number of the file that drives a walk is checked against the file first: the
header tables must lie inside it, a section whose bytes would lie past its end is
damaged and not read (ElfInfo.damage says which, naming the fields' bytes), pyelftools
reads through a BoundedStream (never past the end), names are found within MAX_NAME
bytes, the PLT is scanned for at most one entry per relocation, and each walk charges
the file's budget (budget.py), so no file can hold a worker longer than its budget.
"""
from __future__ import annotations

import mmap
import os
import re
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from elftools.common.exceptions import ELFError
from elftools.construct import ConstructError  # pyelftools' parse errors; it also asserts
from elftools.elf.elffile import ELFFile

from ..errors import AnalysisError
from . import budget
from .elf_stream import BoundedStream
from .symindex import STB_GLOBAL, SymbolIndex, build_index

_STT_FUNC, _STT_GNU_IFUNC = 2, 10
_SHN_UNDEF = 0
_PF_X = 1
#: sections/headers beyond this are not a real ELF but an attack on the reader
MAX_SECTIONS = 65535
MAX_SEGMENTS = 4096
#: what pyelftools raises on a damaged file (it also asserts; and a number of the file
#: can overflow or divide by zero in its arithmetic)
_BROKEN = (ELFError, ConstructError, AssertionError, struct.error, ValueError,
           OverflowError, ZeroDivisionError)


class ElfUnreadable(AnalysisError):
    pass


@dataclass
class Segment:
    vaddr: int
    offset: int
    filesz: int
    executable: bool


@dataclass
class ElfInfo:
    path: str
    name: str  # file name as uploaded (member name inside an archive)
    build_id: str
    debug_only: bool  # objcopy --only-keep-debug: code sections are NOBITS
    has_symtab: bool
    has_dynsym: bool
    debuglink: str
    soname: str
    segments: list[Segment] = field(default_factory=list)
    sha256: str = ""  # of the file's bytes, once known: what its cached index is keyed by
    #: sections whose headers put them past the end of the file, which are not read
    #: (one sentence each, naming the fields and their bytes, for the capture's notes)
    damage: list[str] = field(default_factory=list)

    def vaddr_of(self, file_offset: int) -> int | None:
        """File offset -> ELF virtual address through the PT_LOAD that holds it. Only
        meaningful for the binary that ran (a debug file's offsets are not real)."""
        best = None
        for s in self.segments:
            if s.offset <= file_offset < s.offset + s.filesz:
                if s.executable:
                    return file_offset - s.offset + s.vaddr
                best = best if best is not None else file_offset - s.offset + s.vaddr
        return best


def is_elf(head: bytes) -> bool:
    return head[:4] == b"\x7fELF"


#: what read_info found in a file, by the digest of its bytes: a worker reads the same
#: build's files for each of its captures, and pyelftools takes ~7 ms a file to walk the
#: sections (the 17 DSOs of a system-wide capture: 0.12 s an analysis). Bounded; a copy
#: goes out, so what a caller sets on its ElfInfo stays its own.
_KNOWN: OrderedDict[str, ElfInfo] = OrderedDict()
_KNOWN_MAX = 512
_KNOWN_LOCK = threading.Lock()


def read_info(path: str, name: str | None = None, sha256: str = "") -> ElfInfo:
    """The ELF facts symbolization needs. `sha256`: the digest of the file's bytes, when
    the caller knows it (recorded on upload); then a file read before is not read again."""
    if sha256:
        with _KNOWN_LOCK:
            known = _KNOWN.get(sha256)
            if known is not None:
                _KNOWN.move_to_end(sha256)
        if known is not None:
            return replace(known, path=path, name=name or os.path.basename(path),
                           segments=list(known.segments))
    info = _read_info(path, name, sha256)
    if sha256:
        info.sha256 = sha256
        with _KNOWN_LOCK:
            _KNOWN[sha256] = replace(info, segments=list(info.segments))
            while len(_KNOWN) > _KNOWN_MAX:
                _KNOWN.popitem(last=False)
    return info


def _read_info(path: str, name: str | None, sha256: str) -> ElfInfo:
    name = name or os.path.basename(path)
    with budget.reading(name, sha256), open(path, "rb") as f:
        elf, stream = _open(f, name)
        try:
            return _info(elf, stream, path, name)
        except (*_BROKEN, IndexError) as e:
            raise _unreadable(name, e, stream) from e


def _open(f, name: str) -> tuple[ELFFile, BoundedStream]:
    """pyelftools on the file through a BoundedStream, its header tables checked against
    the file's size before anything walks them."""
    stream = BoundedStream(f)
    try:
        elf = ELFFile(stream)
        _check_tables(elf, stream.size, name)
    except (*_BROKEN, IndexError) as e:
        raise _unreadable(name, e, stream) from e
    return elf, stream


def _unreadable(name: str, e: BaseException, stream: BoundedStream) -> AnalysisError:
    """The error to raise for `e`, which pyelftools raised: the file's OverBudget when
    that is what it wraps (its parser turns every exception of a read into its own)."""
    return _over_budget(e) or ElfUnreadable(
        f"{name}: not a readable ELF file ({e or type(e).__name__}; reading byte "
        f"{stream.last:,} of {stream.size:,})")


def _over_budget(e: BaseException | None) -> budget.OverBudget | None:
    """A copy of the OverBudget among the exceptions `e` was raised in (a copy: raising
    the one in the chain `from e` would make the chain a loop)."""
    for _ in range(16):
        if e is None:
            return None
        if isinstance(e, budget.OverBudget):
            copy = budget.OverBudget(str(e))
            copy.budget = e.budget
            return copy
        e = e.__context__
    return None


#: where the ELF header's table fields are: ELFCLASS -> field -> byte offset
_EHDR = {64: {"e_phoff": 0x20, "e_shoff": 0x28, "e_phentsize": 0x36, "e_phnum": 0x38,
              "e_shentsize": 0x3A, "e_shnum": 0x3C},
         32: {"e_phoff": 0x1C, "e_shoff": 0x20, "e_phentsize": 0x2A, "e_phnum": 0x2C,
              "e_shentsize": 0x2E, "e_shnum": 0x30}}
#: where a section header's fields are, from the start of the header
_SHDR = {64: {"sh_addr": 0x10, "sh_offset": 0x18, "sh_size": 0x20, "sh_link": 0x28},
         32: {"sh_addr": 0x0C, "sh_offset": 0x10, "sh_size": 0x14, "sh_link": 0x18}}


def _check_tables(elf: ELFFile, size: int, name: str) -> None:
    """The section and program header tables must lie inside the file: their counts
    drive every later walk of the file (a 65,535-entry table at offset 0 of a 16 KB
    file is 65,535 reads of the same bytes, each decoded as a section)."""
    at = _EHDR[elf.elfclass]
    for what, count, off, ent, limit in (
            ("section", elf.num_sections(), "e_shoff", "e_shentsize", MAX_SECTIONS),
            ("program", elf.num_segments(), "e_phoff", "e_phentsize", MAX_SEGMENTS)):
        fields = (f"{off} at byte {at[off]}: {elf[off]:,}; {ent} at byte {at[ent]}: "
                  f"{elf[ent]:,}; {count:,} entries")
        if count > limit:
            raise ElfUnreadable(f"{name}: absurd {what} header count ({fields}; at most "
                                f"{limit:,} are read)")
        if count and elf[off] + count * elf[ent] > size:
            raise ElfUnreadable(f"{name}: its {what} header table ({fields}) runs past "
                                f"the end of the {size:,}-byte file")
        budget.charge(count)


@dataclass
class Section:
    """A section whose bytes lie inside the file (or that has none: NOBITS)."""
    index: int
    name: str
    type: str
    addr: int
    offset: int
    size: int
    link: int
    flags: int


#: a section's flag: its bytes are compressed (never true of a real .gnu_debuglink)
_SHF_COMPRESSED = 0x800


def _sections(elf: ELFFile, size: int) -> tuple[dict[int, Section], list[Section]]:
    """The sections by index, and those left out: a section whose header puts its bytes
    past the end of the file is damaged and not read at all (its sh_size or sh_offset is
    what was edited, so no part of what it claims is known to be it)."""
    good: dict[int, Section] = {}
    damaged: list[Section] = []
    # the headers alone (pinned pyelftools' own two steps of get_section): making each
    # section would parse whole hash tables, 232,918 reads for libLLVM-15's
    for i in range(elf.num_sections()):
        h = elf._get_section_header(i)
        s = Section(i, elf._get_section_name(h), h["sh_type"], h["sh_addr"],
                    h["sh_offset"], h["sh_size"], h["sh_link"], h["sh_flags"])
        if s.type not in ("SHT_NOBITS", "SHT_NULL") and s.offset + s.size > size:
            damaged.append(s)
        else:
            good[i] = s
    return good, damaged


def _damage_note(elf: ELFFile, s: Section, size: int) -> str:
    """What is wrong with a damaged section, naming the fields and their bytes."""
    at = elf["e_shoff"] + s.index * elf["e_shentsize"]
    shdr = _SHDR[elf.elfclass]
    what = "its PLT stubs are not named" if s.name in _PLT_ALL else "it is not read"
    return (f"section {s.index} ({s.name or 'unnamed'}) says it holds {s.size:,} "
            f"bytes at byte {s.offset:,} (sh_size at byte {at + shdr['sh_size']:,}, "
            f"sh_offset at byte {at + shdr['sh_offset']:,}), past the end of the "
            f"{size:,}-byte file: {what}")


def _info(elf: ELFFile, stream: BoundedStream, path: str, name: str) -> ElfInfo:
    build_id, debuglink, soname = "", "", ""
    has_symtab = has_dynsym = False
    debug_only = False
    secs, damaged = _sections(elf, stream.size)
    damage = [_damage_note(elf, s, stream.size) for s in damaged]
    for s in secs.values():
        t = s.type
        if t == "SHT_NOTE":
            try:
                for note in elf.get_section(s.index).iter_notes():
                    # type 3 is also NT_STAPSDT: a SystemTap probe note (Debian's postgres,
                    # python3.11) is no build-id; only the GNU owner's is
                    if note["n_type"] == "NT_GNU_BUILD_ID" and note["n_name"] == "GNU" \
                            and not build_id:
                        desc = note["n_desc"]
                        build_id = desc.hex() if isinstance(desc, bytes) else desc
            except _BROKEN as e:  # no build-id from a damaged note
                if _over_budget(e):
                    raise
        elif t == "SHT_SYMTAB":
            has_symtab = s.size > 0
        elif t == "SHT_DYNSYM":
            has_dynsym = s.size > 0
        if s.name == ".gnu_debuglink" and t != "SHT_NOBITS" and \
                not s.flags & _SHF_COMPRESSED:
            stream.seek(s.offset)  # a file name and a CRC: its first 4 KiB are plenty
            raw = stream.read(min(s.size, 4096))
            debuglink = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        if s.name == ".text" and t == "SHT_NOBITS":
            debug_only = True
        if t == "SHT_DYNAMIC":
            try:  # the tags of this section, not more (one without DT_NULL runs on)
                tags = elf.get_section(s.index).iter_tags()
                for _, tag in zip(range(s.size // (16 if elf.elfclass == 64 else 8)), tags):
                    if tag.entry.d_tag == "DT_SONAME":
                        soname = tag.soname
            except (*_BROKEN, AttributeError) as e:
                if _over_budget(e):
                    raise
    return ElfInfo(path, name, build_id, debug_only, has_symtab,
                   has_dynsym, debuglink, soname, _loads(elf), damage=damage)


def _loads(elf: ELFFile) -> list[Segment]:
    return [Segment(seg["p_vaddr"], seg["p_offset"], seg["p_filesz"],
                    bool(seg["p_flags"] & _PF_X))
            for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD"]


def sections(path: str, name: str = "") -> tuple[dict[str, Section], list[Segment]]:
    """The sections of `path` that lie inside the file, by name (the first of each), and
    its PT_LOAD segments: for readers of one section's bytes (cfi.py's .eh_frame)."""
    name = name or os.path.basename(path)
    with budget.reading(name), open(path, "rb") as f:
        elf, stream = _open(f, name)
        try:
            good, _ = _sections(elf, stream.size)
            loads = _loads(elf)
        except (*_BROKEN, IndexError) as e:
            raise _unreadable(name, e, stream) from e
    by_name: dict[str, Section] = {}
    for s in good.values():
        by_name.setdefault(s.name, s)
    return by_name, loads


def function_symbols(path: str, name: str = "", key: str = "") -> tuple[SymbolIndex, str]:
    """Index of the function symbols of `path` (.symtab if present, else .dynsym), plus
    `name@plt` entries for PLT stubs as perf makes them. Returns (index, table used).
    `name`: the file's name for messages; `key`: the SHA-256 of its bytes, if known
    (budget.py)."""
    name = name or os.path.basename(path)
    with budget.reading(name, key), open(path, "rb") as f:
        elf, stream = _open(f, name)
        try:
            secs, damaged = _sections(elf, stream.size)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (*_BROKEN, IndexError, OSError) as e:
            raise _unreadable(name, e, stream) from e
        try:
            plt_damaged = any(s.name in _PLT_ALL for s in damaged)
            return _function_symbols(elf, mm, secs, plt_damaged, name)
        except (*_BROKEN, IndexError) as e:
            raise _over_budget(e) or ElfUnreadable(f"{name}: damaged symbol table ({e})") \
                from e
        finally:
            mm.close()


def _function_symbols(elf, mm, secs: dict[int, Section], plt_damaged: bool, name: str):
    symtab = _first(secs, "SHT_SYMTAB")
    table = symtab if symtab is not None else _first(secs, "SHT_DYNSYM")
    starts, sizes, binds, names = [], [], [], []
    used = "none"
    if table is not None:
        used = ".symtab" if table is symtab else ".dynsym"
        strtab = _linked(elf, secs, table, name)
        _read_symbols(elf, mm, table, strtab, starts, sizes, binds, names, name)
    before = len(names)
    if not plt_damaged:  # (the damage is in read_info's notes)
        _plt_symbols(elf, mm, secs, starts, sizes, binds, names, name)
        if len(names) == before:
            _plt_sections(secs, starts, sizes, binds, names, name)
    return build_index(starts, sizes, binds, names), used


def _first(secs: dict[int, Section], sh_type: str) -> Section | None:
    return next((s for s in secs.values() if s.type == sh_type and s.size > 0), None)


def _by_name(secs: dict[int, Section], name: str) -> Section | None:
    return next((s for s in secs.values() if s.name == name), None)


def _linked(elf, secs: dict[int, Section], sec: Section, name: str) -> Section:
    """The section `sec`'s sh_link names (a symbol table's strings, a relocation
    table's symbols), which must be one inside the file."""
    linked = secs.get(sec.link)
    if linked is None or linked.type == "SHT_NOBITS":
        at = elf["e_shoff"] + sec.index * elf["e_shentsize"] + _SHDR[elf.elfclass]["sh_link"]
        raise ElfUnreadable(f"{name}: section {sec.index} ({sec.name})'s sh_link (byte "
                            f"{at:,}) names section {sec.link:,}, which is not a section "
                            f"inside the file")
    return linked


def _sym_struct(elf: ELFFile) -> struct.Struct:
    e = "<" if elf.little_endian else ">"
    if elf.elfclass == 64:
        return struct.Struct(e + "IBBHQQ")  # name info other shndx value size
    return struct.Struct(e + "IIIBBH")  # name value size info other shndx


#: a symbol name is cut after this many bytes: a string table without a NUL would
#: otherwise make every symbol's name the rest of the table
MAX_NAME = 1 << 16
#: symbols decoded between two charges of the file's budget
_CHUNK = 1024


def _name(strings, off: int) -> bytes:
    end = strings.find(b"\0", off, off + MAX_NAME)
    return strings[off:end if end >= 0 else off + MAX_NAME]


#: the names of a table's symbols may add up to this many times its string table (real
#: files: under 2, as symbol versions and PLT stubs share names) plus a MiB
_NAME_ALLOWANCE = 4


def _read_symbols(elf, mm, table: Section, strtab: Section, starts, sizes, binds, names,
                  file: str) -> None:
    strings = mm[strtab.offset:strtab.offset + strtab.size]
    s_size = len(strings)
    st = _sym_struct(elf)
    count = table.size // st.size
    budget.ahead(count)  # the count, against the budget, before any is read
    allowance, made = _NAME_ALLOWANCE * s_size + (1 << 20), 0
    is64 = elf.elfclass == 64
    view = memoryview(mm)[table.offset:table.offset + count * st.size]
    try:
        for first in range(0, count * st.size, _CHUNK * st.size):
            before = made
            for rec in st.iter_unpack(view[first:first + _CHUNK * st.size]):
                if is64:
                    name_off, info, _other, shndx, value, sym_size = rec
                else:
                    name_off, value, sym_size, info, _other, shndx = rec
                typ = info & 0xF
                if (typ != _STT_FUNC and typ != _STT_GNU_IFUNC) or shndx == _SHN_UNDEF or \
                        not name_off or name_off >= s_size:
                    continue
                name = _name(strings, name_off)
                if name[:1] == b"$":
                    continue  # ARM mapping symbols
                made += len(name)
                starts.append(value)
                sizes.append(sym_size)
                binds.append(info >> 4)
                names.append(name)
            if made > allowance:
                raise ElfUnreadable(
                    f"{file}: the names of the symbols of section {table.index} "
                    f"({table.name}) add up to more than {_NAME_ALLOWANCE} times the "
                    f"{s_size:,} bytes of its string table (section {strtab.index}): "
                    f"their st_name fields point into the same long names again and again")
            budget.charge(min(_CHUNK, count - first // st.size) + (made - before >> 6))
    finally:
        view.release()


#: PLT sections: stubs that jump to a shared library's function
_PLT_SECTIONS = (".plt", ".plt.sec", ".plt.got")
#: what naming the stubs reads: a damaged one of these leaves them unnamed
_PLT_ALL = _PLT_SECTIONS + (".rela.plt", ".rel.plt")


def _plt_sections(secs: dict[int, Section], starts, sizes, binds, names, dso: str) -> None:
    """When the stubs cannot be named (a debug file keeps the section headers but not
    .rela.plt's contents), their addresses still lie in the PLT, not in the function
    before it (`_init`): name them "[plt] in DSO"."""
    base = dso[:-len(".debug")] if dso.endswith(".debug") else dso
    # a build-id tree's debug file is named by its hash: say only [plt]
    label = b"[plt]" if re.fullmatch(r"[0-9a-f]{16,}", base) else \
        b"[plt] in " + base.encode("utf-8", "replace")
    for sec_name in _PLT_SECTIONS:
        sec = _by_name(secs, sec_name)
        if sec is not None and sec.size and sec.addr:
            starts.append(sec.addr)
            sizes.append(sec.size)
            binds.append(STB_GLOBAL)
            names.append(label)


def _plt_symbols(elf, mm, secs: dict[int, Section], starts, sizes, binds, names,
                 name: str) -> None:
    """perf names PLT stubs `sym@plt`: one entry per .rela.plt relocation, in order, in
    .plt.sec (x86-64 with IBT) or after .plt's header."""
    rela = _by_name(secs, ".rela.plt") or _by_name(secs, ".rel.plt")
    if rela is None or rela.type == "SHT_NOBITS":
        return
    plt_sec = _by_name(secs, ".plt.sec")
    plt = _by_name(secs, ".plt")
    machine = elf["e_machine"]
    if plt_sec is not None and plt_sec.type != "SHT_NOBITS":
        sec, header, entry = plt_sec, 0, 16
    elif plt is not None and plt.type != "SHT_NOBITS":
        header = 32 if machine == "EM_AARCH64" else 16
        entry = 16 if machine in ("EM_X86_64", "EM_386", "EM_AARCH64") else 0
        sec = plt
        if not entry:
            return
    else:
        return
    dynsym = _linked(elf, secs, rela, name)
    if dynsym.type == "SHT_NOBITS":
        return
    strtab = _linked(elf, secs, dynsym, name)
    strings = mm[strtab.offset:strtab.offset + strtab.size]
    sym = _sym_struct(elf)
    e = "<" if elf.little_endian else ">"
    is_rela = rela.type == "SHT_RELA"
    if elf.elfclass == 64:
        rel = struct.Struct(e + ("QQq" if is_rela else "QQ"))
    else:
        rel = struct.Struct(e + ("IIi" if is_rela else "II"))
    count = rela.size // rel.size
    budget.ahead(count)
    relocs = list(rel.iter_unpack(mm[rela.offset:rela.offset + count * rel.size]))
    budget.charge(count)
    symbols = dynsym.size // sym.size
    slot_of = None
    if machine == "EM_X86_64":
        slot_of = _x86_64_plt_slots(mm, sec, header, entry,
                                    {r[0]: i for i, r in enumerate(relocs)}, count)
    for i, r in enumerate(relocs):
        info = r[1]
        sym_ix = info >> 32 if elf.elfclass == 64 else info >> 8
        if not sym_ix:
            # an IRELATIVE slot (an ifunc resolved at load: glibc's memcpy and strlen
            # variants) has no symbol: named by its addend as objdump names it, and as
            # perf does since its 2023 PLT fixes (perf 6.1 printed a bare "@plt")
            if not is_rela:
                continue
            stub = f"*ABS*+0x{r[2] & (1 << 64) - 1:x}".encode()
        elif sym_ix >= symbols:
            continue  # a symbol the table does not hold: the stub stays unnamed
        else:
            name_off = sym.unpack_from(mm, dynsym.offset + sym_ix * sym.size)[0]
            stub = _name(strings, name_off) if name_off < len(strings) else b""
        if not stub:
            continue
        at = sec.addr + header + i * entry if slot_of is None else slot_of.get(i)
        if at is None:
            continue
        starts.append(at)
        sizes.append(entry)
        binds.append(STB_GLOBAL)
        names.append(stub + b"@plt")


#: PLT entries looked at beyond one per relocation: the header's and the lazy TLSDESC
#: entry's, which jump elsewhere
_PLT_EXTRA = 4


def _x86_64_plt_slots(mm, sec: Section, header: int, entry: int, reloc_at: dict[int, int],
                      relocs: int) -> dict[int, int] | None:
    """relocation index -> its PLT entry's address, from each entry's own `jmp
    *GOT(%rip)` (ff 25 disp32, after endbr64/bnd in IBT entries), as objdump finds them
    (bfd's elf_x86_64_get_synthetic_symtab): the .rela.plt order is not the PLT's when
    the linker puts IRELATIVE slots last (glibc's libc.so.6). None when no entry decodes,
    and then the relocations are taken in order. The section lies inside the file
    (_sections), and no more entries are looked at than there are relocations to find
    (a .plt.sec claiming 2^62 bytes was a 20-minute loop)."""
    addr, off = sec.addr, sec.offset
    size = min(sec.size, header + (relocs + _PLT_EXTRA) * entry)
    budget.charge(size // entry)
    out: dict[int, int] = {}
    for e in range(header, size - entry + 1, entry):
        code = mm[off + e:off + e + entry]
        j = code.find(b"\xff\x25")
        if j < 0 or j + 6 > len(code):
            continue
        disp = struct.unpack_from("<i", code, j + 2)[0]
        got = addr + e + j + 6 + disp
        ix = reloc_at.get(got)
        if ix is not None:
            out[ix] = addr + e
    return out or None
