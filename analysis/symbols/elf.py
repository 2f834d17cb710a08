"""What symbolization needs from an ELF file: build-id, PT_LOAD segments, the debuglink,
whether it is a separate debug file, and its function symbols.

pyelftools reads the headers; the symbol tables themselves are decoded with
`struct.iter_unpack` straight from the mapped section bytes, because a library like
libtorch_cpu.so has hundreds of thousands of symbols and a Python object per symbol is
too slow (see symindex.py for the index they become).
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
from .symindex import STB_GLOBAL, SymbolIndex, build_index

_STT_FUNC, _STT_GNU_IFUNC = 2, 10
_SHN_UNDEF = 0
_PF_X = 1
#: sections/headers beyond this are not a real ELF but an attack on the reader
MAX_SECTIONS = 65535
MAX_SEGMENTS = 4096
#: what pyelftools raises on a damaged file (it also asserts)
_BROKEN = (ELFError, ConstructError, AssertionError, struct.error, ValueError)


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
    info = _read_info(path, name)
    if sha256:
        info.sha256 = sha256
        with _KNOWN_LOCK:
            _KNOWN[sha256] = replace(info, segments=list(info.segments))
            while len(_KNOWN) > _KNOWN_MAX:
                _KNOWN.popitem(last=False)
    return info


def _read_info(path: str, name: str | None) -> ElfInfo:
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            if elf.num_sections() > MAX_SECTIONS or elf.num_segments() > MAX_SEGMENTS:
                raise ElfUnreadable(f"{name or path}: absurd section or segment count")
            return _info(elf, path, name or os.path.basename(path))
    except (*_BROKEN, OSError, IndexError) as e:
        raise ElfUnreadable(f"{name or path}: not a readable ELF file ({e})") from e


def _info(elf: ELFFile, path: str, name: str) -> ElfInfo:
    build_id, debuglink, soname = "", "", ""
    has_symtab = has_dynsym = False
    debug_only = False
    for sec in elf.iter_sections():
        t = sec["sh_type"]
        if t == "SHT_NOTE":
            try:
                for note in sec.iter_notes():
                    # type 3 is also NT_STAPSDT: a SystemTap probe note (Debian's postgres,
                    # python3.11) is no build-id; only the GNU owner's is
                    if note["n_type"] == "NT_GNU_BUILD_ID" and note["n_name"] == "GNU" \
                            and not build_id:
                        desc = note["n_desc"]
                        build_id = desc.hex() if isinstance(desc, bytes) else desc
            except _BROKEN:
                pass
        elif t == "SHT_SYMTAB":
            has_symtab = sec["sh_size"] > 0
        elif t == "SHT_DYNSYM":
            has_dynsym = sec["sh_size"] > 0
        if sec.name == ".gnu_debuglink" and t != "SHT_NOBITS":
            raw = sec.data()
            debuglink = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        if sec.name == ".text" and t == "SHT_NOBITS":
            debug_only = True
        if t == "SHT_DYNAMIC" and t != "SHT_NOBITS":
            try:
                for tag in sec.iter_tags():
                    if tag.entry.d_tag == "DT_SONAME":
                        soname = tag.soname
            except (*_BROKEN, AttributeError):
                pass
    segments = []
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD":
            segments.append(Segment(seg["p_vaddr"], seg["p_offset"], seg["p_filesz"],
                                    bool(seg["p_flags"] & _PF_X)))
    return ElfInfo(path, name, build_id, debug_only, has_symtab,
                   has_dynsym, debuglink, soname, segments)


def function_symbols(path: str) -> tuple[SymbolIndex, str]:
    """Index of the function symbols of `path` (.symtab if present, else .dynsym), plus
    `name@plt` entries for PLT stubs as perf makes them. Returns (index, table used)."""
    with open(path, "rb") as f:
        try:
            elf = ELFFile(f)
            symtab = _section(elf, "SHT_SYMTAB")
            table = symtab if symtab is not None else _section(elf, "SHT_DYNSYM")
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (*_BROKEN, OSError) as e:
            raise ElfUnreadable(f"{path}: not a readable ELF file ({e})") from e
        try:
            starts, sizes, binds, names = [], [], [], []
            used = "none"
            if table is not None:
                used = ".symtab" if table is symtab else ".dynsym"
                _read_symbols(elf, mm, table, starts, sizes, binds, names)
            before = len(names)
            _plt_symbols(elf, mm, starts, sizes, binds, names)
            if len(names) == before:
                _plt_sections(elf, starts, sizes, binds, names, os.path.basename(path))
            return build_index(starts, sizes, binds, names), used
        except (*_BROKEN, IndexError) as e:
            raise ElfUnreadable(f"{path}: damaged symbol table ({e})") from e
        finally:
            mm.close()


def _section(elf: ELFFile, sh_type: str):
    for sec in elf.iter_sections():
        if sec["sh_type"] == sh_type and sec["sh_size"] > 0:
            return sec
    return None


def _sym_struct(elf: ELFFile) -> struct.Struct:
    e = "<" if elf.little_endian else ">"
    if elf.elfclass == 64:
        return struct.Struct(e + "IBBHQQ")  # name info other shndx value size
    return struct.Struct(e + "IIIBBH")  # name value size info other shndx


def _read_symbols(elf, mm, table, starts, sizes, binds, names) -> None:
    strtab = elf.get_section(table["sh_link"])
    s_off, s_size = strtab["sh_offset"], strtab["sh_size"]
    strings = mm[s_off:s_off + s_size]
    off, size = table["sh_offset"], table["sh_size"]
    st = _sym_struct(elf)
    size -= size % st.size
    data = mm[off:off + size]
    is64 = elf.elfclass == 64
    for rec in st.iter_unpack(data):
        if is64:
            name_off, info, _other, shndx, value, sym_size = rec
        else:
            name_off, value, sym_size, info, _other, shndx = rec
        typ = info & 0xF
        if (typ != _STT_FUNC and typ != _STT_GNU_IFUNC) or shndx == _SHN_UNDEF or \
                not name_off or name_off >= s_size:
            continue
        end = strings.find(b"\0", name_off)
        name = strings[name_off:end if end >= 0 else s_size]
        if name[:1] == b"$":
            continue  # ARM mapping symbols
        starts.append(value)
        sizes.append(sym_size)
        binds.append(info >> 4)
        names.append(name)


#: PLT sections: stubs that jump to a shared library's function
_PLT_SECTIONS = (".plt", ".plt.sec", ".plt.got")


def _plt_sections(elf, starts, sizes, binds, names, dso: str) -> None:
    """When the stubs cannot be named (a debug file keeps the section headers but not
    .rela.plt's contents), their addresses still lie in the PLT, not in the function
    before it (`_init`): name them "[plt] in DSO"."""
    base = dso[:-len(".debug")] if dso.endswith(".debug") else dso
    # a build-id tree's debug file is named by its hash: say only [plt]
    label = b"[plt]" if re.fullmatch(r"[0-9a-f]{16,}", base) else \
        b"[plt] in " + base.encode("utf-8", "replace")
    for sec_name in _PLT_SECTIONS:
        sec = elf.get_section_by_name(sec_name)
        if sec is not None and sec["sh_size"] and sec["sh_addr"]:
            starts.append(sec["sh_addr"])
            sizes.append(sec["sh_size"])
            binds.append(STB_GLOBAL)
            names.append(label)


def _plt_symbols(elf, mm, starts, sizes, binds, names) -> None:
    """perf names PLT stubs `sym@plt`: one entry per .rela.plt relocation, in order, in
    .plt.sec (x86-64 with IBT) or after .plt's header."""
    rela = elf.get_section_by_name(".rela.plt") or elf.get_section_by_name(".rel.plt")
    if rela is None or rela["sh_type"] == "SHT_NOBITS":
        return
    plt_sec = elf.get_section_by_name(".plt.sec")
    plt = elf.get_section_by_name(".plt")
    machine = elf["e_machine"]
    if plt_sec is not None and plt_sec["sh_type"] != "SHT_NOBITS":
        base, header, entry = plt_sec["sh_addr"], 0, 16
    elif plt is not None and plt["sh_type"] != "SHT_NOBITS":
        header = 32 if machine == "EM_AARCH64" else 16
        entry = 16 if machine in ("EM_X86_64", "EM_386", "EM_AARCH64") else 0
        base = plt["sh_addr"]
        if not entry:
            return
    else:
        return
    dynsym = elf.get_section(rela["sh_link"])
    if dynsym is None or dynsym["sh_type"] == "SHT_NOBITS":
        return
    strtab = elf.get_section(dynsym["sh_link"])
    strings = mm[strtab["sh_offset"]:strtab["sh_offset"] + strtab["sh_size"]]
    sym = _sym_struct(elf)
    e = "<" if elf.little_endian else ">"
    is_rela = rela["sh_type"] == "SHT_RELA"
    if elf.elfclass == 64:
        rel = struct.Struct(e + ("QQq" if is_rela else "QQ"))
    else:
        rel = struct.Struct(e + ("IIi" if is_rela else "II"))
    data = mm[rela["sh_offset"]:rela["sh_offset"] + rela["sh_size"]]
    d_off = dynsym["sh_offset"]
    relocs = list(rel.iter_unpack(data[:len(data) - len(data) % rel.size]))
    slot_of = None
    if machine == "EM_X86_64":
        sec = plt_sec if base == (plt_sec["sh_addr"] if plt_sec is not None else None) else plt
        slot_of = _x86_64_plt_slots(mm, sec, header, entry, {r[0]: i for i, r in
                                                            enumerate(relocs)})
    for i, r in enumerate(relocs):
        info = r[1]
        sym_ix = info >> 32 if elf.elfclass == 64 else info >> 8
        if not sym_ix:
            # an IRELATIVE slot (an ifunc resolved at load: glibc's memcpy and strlen
            # variants) has no symbol: named by its addend as objdump names it, and as
            # perf does since its 2023 PLT fixes (perf 6.1 printed a bare "@plt")
            if not is_rela:
                continue
            name = f"*ABS*+0x{r[2] & (1 << 64) - 1:x}".encode()
        else:
            rec = sym.unpack_from(mm, d_off + sym_ix * sym.size)
            name_off = rec[0]
            end = strings.find(b"\0", name_off)
            name = strings[name_off:end if end >= 0 else len(strings)]
        if not name:
            continue
        at = base + header + i * entry if slot_of is None else slot_of.get(i)
        if at is None:
            continue
        starts.append(at)
        sizes.append(entry)
        binds.append(STB_GLOBAL)
        names.append(name + b"@plt")


def _x86_64_plt_slots(mm, sec, header: int, entry: int, reloc_at: dict[int, int]
                      ) -> dict[int, int] | None:
    """relocation index -> its PLT entry's address, from each entry's own `jmp
    *GOT(%rip)` (ff 25 disp32, after endbr64/bnd in IBT entries), as objdump finds them
    (bfd's elf_x86_64_get_synthetic_symtab): the .rela.plt order is not the PLT's when
    the linker puts IRELATIVE slots last (glibc's libc.so.6). None when no entry decodes,
    and then the relocations are taken in order."""
    if sec is None or sec["sh_type"] == "SHT_NOBITS":
        return None
    addr, off, size = sec["sh_addr"], sec["sh_offset"], sec["sh_size"]
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
