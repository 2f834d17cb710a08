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
_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")  # Widget::name[abi:cxx11](): mangling, not identity
# without_signature's reading of a demangled name
_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept", " transaction_safe")
_IDENT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_~$.")
_OPERATOR_CHARS = set("+-*/%^&|~!=<>,[]()")
_OPEN_OF = {">": "<", ")": "(", "]": "[", "}": "{"}


def unnamed(name: str) -> bool:
    """[unknown], libfoo.so+0x2458, raw addresses: no symbol names the frame."""
    return name.startswith("[") or "+0x" in name or name.startswith("0x")


def address_like(name: str) -> bool:
    """A frame no symbol names that stands for code at an address (`[unknown]`,
    `libfoo.so+0x2458`, `0x7f12...`), not a marker the engine made (`[truncated: N
    frames]`, `[deeper frames]`): another build places that code elsewhere."""
    return name == "[unknown]" or "+0x" in name or name.startswith("0x")


@functools.lru_cache(maxsize=200_000)
def function_identity(name: str) -> str:
    """`void std::vector<int>::_M_realloc_insert<int>(iterator, int&&) [clone .isra.0]`
    -> `std::vector<int>::_M_realloc_insert<int>`; `do_sock_write.isra.1` ->
    `do_sock_write`. Names that are not C or C++ symbols come back unchanged."""
    if unnamed(name):
        return name  # no symbol to reduce
    plt = name.endswith("@plt")
    base = name[:-4] if plt else name
    base = _SYMBOL_VERSION.sub("", base)
    base = _CXX_CLONE.sub("", base)
    base = _C_CLONE.sub("", base)
    base = without_signature(_ABI_TAG.sub("", base))
    return base + "@plt" if plt else base


def without_signature(name: str) -> str:
    """A demangled C++ function without its parameter list, method qualifiers and the
    return type of a function template, as libiberty prints it without DMGL_PARAMS (what
    perf shows; `c++filt -p -i` prints the same: tests/test_short_names.py checks 58,521
    real symbols): `std::vector<int, std::allocator<int> >::_M_realloc_insert<int>` for
    `void std::vector<...>::_M_realloc_insert<int>(...)`. Brackets are matched, so
    parameter lists inside template arguments (`std::function<void ()>`) and lambdas
    (`{lambda()#1}`) stay. A name that is no function signature comes back as it is."""
    s = name
    stripped = True
    while stripped:
        stripped = False
        for q in _QUALIFIERS:
            if s.endswith(q) and s[:-len(q)].endswith((")", " const", " volatile", "&")):
                s = s[:-len(q)]
                stripped = True
    if not s.endswith(")"):
        return name
    i = _open_of(s, len(s) - 1)
    head = s[:i] if i > 0 else ""
    if not head or head.endswith("::"):
        return name
    if head.endswith(">"):
        head = head[_qualified_start(head):]
    return head


def _open_of(text: str, close: int) -> int:
    """Index of the bracket that `text[close]` closes (-1 when none), counting only
    that kind of bracket."""
    c, o = text[close], _OPEN_OF[text[close]]
    depth = 0
    for i in range(close, -1, -1):
        if text[i] == c:
            depth += 1
        elif text[i] == o:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _qualified_start(text: str) -> int:
    """Where the qualified name that ends `text` begins: what is before it (and a space)
    is a function template's return type."""
    i = len(text)
    while True:
        # one component, from its end: template arguments, then the plain name
        j = i - 1
        if j >= 0 and text[j] == ">":
            j = _open_of(text, j)
            if j < 0:
                return 0
            if j > 0 and text[j - 1] == " ":  # `operator< <char>`
                j -= 1
            j -= 1
        k = j
        while k >= 0 and text[k] in _OPERATOR_CHARS:
            k -= 1
        if k < j and text[max(0, k - 7):k + 1] == "operator":
            j = k - 8  # an operator's symbols: `operator>>`, `operator+`
        elif j >= 0 and text[j] in ")}]":
            j = _open_of(text, j) - 1  # `(anonymous namespace)`, `{lambda()#1}`
        else:
            while j >= 0 and text[j] in _IDENT:
                j -= 1
            if text[max(0, j - 8):j + 1] == "operator ":
                j -= 9  # `operator new`, `operator delete`
        start = j + 1
        if start >= 2 and text[start - 2:start] == "::":
            i = start - 2
            continue
        return start


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
