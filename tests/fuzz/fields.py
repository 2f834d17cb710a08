"""Where the sizes, counts and offsets of a real ELF, perf.data or jitdump file are, so the fuzzer
can write absurd numbers exactly there: a random offset rarely lands on a field that
drives a loop (an 8-byte edit of one section header's sh_size held a worker for 20
minutes), a field-aware edit lands on one every time. Only seeds are parsed here (files
we trust); each function returns groups of (byte offset, struct format) pairs, one group
per kind of field (the header's, the section headers', the words of SAMPLE records...),
so that the fuzzer picks a kind first and a rare kind is not drowned by a common one."""
from __future__ import annotations

import io
import struct
from functools import lru_cache

Field = tuple[int, str]
Groups = tuple[tuple[Field, ...], ...]


def _groups(data: bytes, groups: dict) -> Groups:
    """The non-empty groups, each without fields that pass the end of the file."""
    out = []
    for fields in groups.values():
        kept = tuple((o, f) for o, f in fields if 0 <= o and o + struct.calcsize(f) <= len(data))
        if kept:
            out.append(kept)
    return tuple(out)


@lru_cache(maxsize=None)
def elf_fields(data: bytes) -> Groups:
    """The ELF header's table fields, every section header's and program header's
    address, offset, size, link, info and entry size, the headers of notes, the values
    of dynamic entries, and the name, value and size of the first symbols of each table
    and the info of the first relocations."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    e = "<" if elf.little_endian else ">"
    is64 = elf.elfclass == 64
    word, addr = (e + "Q", e + "Q") if is64 else (e + "I", e + "I")
    half, u32 = e + "H", e + "I"
    g: dict[str, list[Field]] = {k: [] for k in ("ehdr", "shdr", "note", "dynamic",
                                                 "symbol", "reloc", "phdr")}
    out = g["ehdr"]
    # e_phoff, e_shoff, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
    if is64:
        out += [(0x20, word), (0x28, word)] + [(o, half) for o in (0x36, 0x38, 0x3A, 0x3C, 0x3E)]
    else:
        out += [(0x1C, word), (0x20, word)] + [(o, half) for o in (0x2A, 0x2C, 0x2E, 0x30, 0x32)]
    shoff, shentsize = elf["e_shoff"], elf["e_shentsize"]
    # offsets in Elf64_Shdr / Elf32_Shdr of: name, addr, offset, size, link, info, entsize
    sh = ((0, u32), (0x10, word), (0x18, word), (0x20, word), (0x28, u32), (0x2C, u32),
          (0x38, word)) if is64 else \
        ((0, u32), (0x0C, word), (0x10, word), (0x14, word), (0x18, u32), (0x1C, u32),
         (0x24, word))
    for i, sec in enumerate(elf.iter_sections()):
        base = shoff + i * shentsize
        g["shdr"] += [(base + o, fmt) for o, fmt in sh]
        t = sec["sh_type"]
        off, size = sec["sh_offset"], sec["sh_size"]
        if t == "SHT_NOBITS" or off + size > len(data):
            continue
        if t == "SHT_NOTE":  # namesz, descsz of the first notes
            pos = off
            for _ in range(4):
                if pos + 12 > off + size:
                    break
                namesz, descsz = struct.unpack_from(e + "II", data, pos)
                g["note"] += [(pos, u32), (pos + 4, u32)]
                pos += 12 + (namesz + 3 & ~3) + (descsz + 3 & ~3)
        elif t == "SHT_DYNAMIC":  # d_val of the first entries
            step = 16 if is64 else 8
            g["dynamic"] += [(off + k * step + step // 2, word)
                             for k in range(min(size // step, 24))]
        elif t in ("SHT_SYMTAB", "SHT_DYNSYM"):
            step = 24 if is64 else 16
            for k in range(1, min(size // step, 6)):
                at = off + k * step
                g["symbol"] += [(at, u32)] + ([(at + 8, addr), (at + 16, word)] if is64
                                              else [(at + 4, addr), (at + 8, word)])
        elif t in ("SHT_RELA", "SHT_REL"):
            step = (24 if t == "SHT_RELA" else 16) if is64 else (12 if t == "SHT_RELA" else 8)
            half_step = 8 if is64 else 4
            g["reloc"] += [(off + k * step + half_step, word)
                           for k in range(min(size // step, 6))]
    phoff, phentsize = elf["e_phoff"], elf["e_phentsize"]
    # offset, vaddr, filesz, memsz
    ph = ((8, word), (0x10, addr), (0x20, word), (0x28, word)) if is64 else \
        ((4, word), (8, addr), (0x10, word), (0x14, word))
    for i in range(elf.num_segments()):
        g["phdr"] += [(phoff + i * phentsize + o, fmt) for o, fmt in ph]
    return _groups(data, g)


@lru_cache(maxsize=None)
def perf_data_fields(data: bytes) -> Groups:
    """The file header's sizes and offsets, each attr's size and ids pointer, the feature
    table, every record's size, and each 8-byte word of the first records (a sample's
    callchain nr, a branch stack's nr, a user stack's size) and of the feature
    sections (string lengths, counts)."""
    e = "<" if data[:8] == b"PERFILE2" else ">"
    q, u32, u16 = e + "Q", e + "I", e + "H"
    size, = struct.unpack_from(q, data, 8)
    g: dict = {"header": [(8, q)], "attrs": [], "features": [], "sizes": []}
    out = g["header"]
    if size == 16:  # a pipe: records from byte 16
        data_off, data_end = 16, len(data)
    else:
        attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from(
            e + "5Q", data, 16)
        out += [(o, q) for o in range(16, 56, 8)]
        for at in range(attrs_off, min(attrs_off + attrs_size, len(data)), max(attr_size, 8)):
            g["attrs"] += [(at + 4, u32), (at + attr_size - 16, q), (at + attr_size - 8, q)]
        data_end = min(data_off + data_size, len(data))
        table = data_off + data_size
        bits = sum(bin(w).count("1") for w in struct.unpack_from(e + "4Q", data, 72))
        for k in range(bits):
            at = table + 16 * k
            if at + 16 > len(data):
                break
            out += [(at, q), (at + 8, q)]
            off, sz = struct.unpack_from(e + "QQ", data, at)
            g["features"] += [(o, u32) for o in range(off, min(off + sz, off + 256,
                                                                len(data) - 4), 4)]
    pos, seen = data_off, {}
    while pos + 8 <= data_end:
        rtype, _, rsize = struct.unpack_from(e + "IHH", data, pos)
        if rsize < 8:
            break
        g["sizes"].append((pos + 6, u16))
        seen[rtype] = seen.get(rtype, 0) + 1
        if seen[rtype] <= 24:  # words inside the first records of each type
            words = g.setdefault(rtype, [])
            words += [(o, q) for o in range(pos + 8, min(pos + rsize - 7, pos + 512), 8)]
            words += [(o, u32) for o in range(pos + 8, min(pos + rsize - 3, pos + 512), 8)]
        pos += rsize
    return _groups(data, g)


@lru_cache(maxsize=None)
def jitdump_fields(data: bytes) -> Groups:
    """A jit-PID.dump's header (version, its size, pid, flags), every record's type and
    total size, and each code load's address and size and move's addresses
    (tools/perf/util/jitdump.h)."""
    e = "<" if struct.unpack_from("<I", data)[0] == 0x4A695444 else ">"
    u32, u64 = e + "I", e + "Q"
    g: dict[str, list[Field]] = {"header": [(4, u32), (8, u32), (20, u32), (32, u64)],
                                 "prefix": [], "code": []}
    pos = struct.unpack_from(u32, data, 8)[0]
    while pos + 16 <= len(data):
        kind, total = struct.unpack_from(e + "II", data, pos)
        g["prefix"] += [(pos, u32), (pos + 4, u32)]
        if kind in (0, 1):  # load: code_addr, code_size; move: old, new, size
            g["code"] += [(pos + 32, u64), (pos + 40, u64), (pos + 48, u64)]
        if total < 16:
            break
        pos += total
    return _groups(data, g)
