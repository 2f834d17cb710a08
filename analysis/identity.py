"""One identity for a function across captures and builds.

A function keeps its identity when its build changes how the compiler emitted it:
GCC names the copies it specialises `foo.isra.0`, `foo.constprop.1`, `foo.part.0`,
`foo.cold` (C, and the kernel: `finish_task_switch.isra.0` in one kernel build,
`finish_task_switch` in the next) or `foo(int) [clone .isra.0]` (C++, demangled), and
another build may inline, clone or number them differently. A demangled C++ name also
carries its parameter list and, for templates, its return type, which a signature change
moves without the function becoming another. So comparisons key functions by the name
without those, and libraries by their file name without path or version
(`/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30` is `libstdc++.so`).

Facts about the suffixes: GCC's ipa-sra (`isra`), ipa-cp (`constprop`), ipa-split
(`part`), hot/cold splitting (`cold`), LTO privatisation (`lto_priv`), outlined OpenMP
regions (`_omp_fn`), LLVM's ThinLTO promotion (`llvm.<hash>`); see GCC's
`clone_function_name` and LLVM's `getGlobalIdentifier`.
"""
from __future__ import annotations

import functools
import re

_C_CLONE = re.compile(
    r"(?:\.(?:isra|constprop|part|cold|lto_priv|_omp_fn|clone|llvm)"
    r"(?:\.[0-9a-f]+)*)+$")
_CXX_CLONE = re.compile(r"(?:\s*\[clone [^\]]*\])+$")
_SYMBOL_VERSION = re.compile(r"@@?[A-Za-z_][\w.]*$")  # pthread_mutex_lock@@GLIBC_2.2.5
_QUALIFIERS = re.compile(r"(?:\s+(?:const|volatile|&&|&|noexcept))+$")
_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")  # Widget::name[abi:cxx11](): mangling, not identity
#: operators whose spelling holds brackets the parser must not count
_OPERATORS = ("operator<<=", "operator>>=", "operator<=>", "operator<<", "operator>>",
              "operator<=", "operator>=", "operator->*", "operator->", "operator()",
              "operator[]", "operator<", "operator>")
_OPEN, _CLOSE = "(<[{", ")>]}"


@functools.lru_cache(maxsize=200_000)
def function_identity(name: str) -> str:
    """`void std::vector<int>::_M_realloc_insert<int>(iterator, int&&) [clone .isra.0]`
    -> `std::vector<int>::_M_realloc_insert<int>`; `do_sock_write.isra.1` ->
    `do_sock_write`. Names that are not C or C++ symbols come back unchanged."""
    if name.startswith("[") or "+0x" in name or name.startswith("0x"):
        return name  # [unknown], libfoo.so+0x2458, raw addresses: no symbol to reduce
    plt = name.endswith("@plt")
    base = name[:-4] if plt else name
    base = _SYMBOL_VERSION.sub("", base)
    base = _CXX_CLONE.sub("", base)
    base = _C_CLONE.sub("", base)
    base = _without_signature(_ABI_TAG.sub("", base))
    return base + "@plt" if plt else base


def _without_signature(name: str) -> str:
    """The qualified name alone: no trailing parameter list (and its qualifiers), no
    leading return type. Brackets are matched, so parameter lists inside template
    arguments (`std::function<void ()>`) and lambdas (`{lambda()#1}`) stay."""
    if "(" not in name and " " not in name:
        return name
    masked = name
    for i, op in enumerate(_OPERATORS):
        masked = masked.replace(op, f"operator\x01{i}\x02")
    masked = _QUALIFIERS.sub("", masked)
    if masked.endswith(")"):
        depth = 0
        for i in range(len(masked) - 1, -1, -1):
            c = masked[i]
            if c in _CLOSE:
                depth += 1
            elif c in _OPEN:
                depth -= 1
                if depth == 0:
                    if c == "(" and i > 0:
                        masked = masked[:i]
                    break
    depth = 0
    start = 0
    for i, c in enumerate(masked):  # the return type ends at the last top-level space
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif c == " " and depth == 0 and not masked[:i].endswith(("operator", "\x02")):
            start = i + 1
    masked = masked[start:]
    for i, op in enumerate(_OPERATORS):
        masked = masked.replace(f"operator\x01{i}\x02", op)
    return masked.strip() or name


_SO_VERSION = re.compile(r"\.so(?:\.\d+)+$")
#: libfoo-2.3.so, and a program named with its release (gateway-1.1, server-2.0.4)
_DASH_VERSION = re.compile(r"-\d+(?:\.\d+)*(?=\.so$)|-\d+(?:\.\d+)+$")
_PERF_MAP = re.compile(r"^perf-\d+\.map$")


@functools.lru_cache(maxsize=20_000)
def library_identity(path: str) -> str:
    """`/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30` -> `libstdc++.so`,
    `/opt/qualla-1.1.0/lib/libqualla.so` -> `libqualla.so`, `/tmp/perf-812.map` ->
    `perf-PID.map` (JIT code of any process), `/srv/gateway-1.1` -> `gateway`,
    `[kernel.kallsyms]` as it is."""
    if path.startswith("["):
        return path
    base = path.rsplit("/", 1)[-1]
    if _PERF_MAP.match(base):
        return "perf-PID.map"
    base = _SO_VERSION.sub(".so", base)
    return _DASH_VERSION.sub("", base)


def function_key(name: str, dso: str) -> tuple[str, str]:
    """What identifies a function in any capture: its identity in its library's."""
    return function_identity(name), library_identity(dso)
