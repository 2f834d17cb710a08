"""Readable names for C++ (Itanium ABI) and Rust (legacy and v0) symbols.

C++ goes through libstdc++'s own demangler (`cxxfilt`), so names read as perf and
c++filt print them; Rust through `rust-demangler`, with the legacy hash suffix dropped
as perf does. Anything else is returned unchanged; results are cached per name.
"""
from __future__ import annotations

import functools
import re

import cxxfilt
import rust_demangler

_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_RUST_LEGACY = re.compile(r"^_ZN.*17h[0-9a-f]{16}E")


@functools.lru_cache(maxsize=200_000)
def demangle(raw: str) -> str:
    base, at, version = raw.partition("@")  # keep `@plt`, `@@GLIBC_2.2.5`
    suffix = at + version
    try:
        if base.startswith("_R") or _RUST_LEGACY.match(base):
            return _RUST_HASH.sub("", rust_demangler.demangle(base)) + suffix
        if base.startswith("_Z"):
            return cxxfilt.demangle(base) + suffix
    except Exception:  # a name the demanglers refuse stays as it is
        return raw
    return raw


_CLONES = re.compile(r"(?: \[clone [^\]]*\])+$")
_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept", " transaction_safe")
#: special names libiberty prints whole even without DMGL_PARAMS (as `c++filt -p` does)
_SPECIAL = ("transaction clone for ", "non-virtual thunk to ", "virtual thunk to ",
            "covariant return thunk to ", "typeinfo for ", "typeinfo name for ",
            "vtable for ", "VTT for ", "construction vtable for ", "guard variable for ",
            "TLS init function for ", "TLS wrapper function for ", "reference temporary",
            "hidden alias for ", "template parameter object for ")
_IDENT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_~$.")
_OPERATOR_CHARS = set("+-*/%^&|~!=<>,[]()")
_CLOSE = {">": "<", ")": "(", "]": "[", "}": "{"}


@functools.lru_cache(maxsize=200_000)
def short_name(full: str) -> str:
    """A demangled C++ signature without its parameter list, method qualifiers and the
    return type of a function template: what perf prints (libiberty's demangler without
    DMGL_PARAMS; `c++filt -p -i` prints the same), e.g. `std::vector<int, std::
    allocator<int> >::_M_realloc_insert<int>` for `void std::vector<...>::
    _M_realloc_insert<int>(...)`. Names that are no function come back whole."""
    s, at, version = full.partition("@")
    if s.startswith(_SPECIAL):
        return full
    s = _CLONES.sub("", s)
    stripped = True
    while stripped:
        stripped = False
        for q in _QUALIFIERS:
            if s.endswith(q) and s[:-len(q)].endswith((")", " const", " volatile", "&")):
                s = s[:-len(q)]
                stripped = True
    if not s.endswith(")"):
        return full
    i = _open_of(s, len(s) - 1)
    name = s[:i] if i > 0 else ""
    if not name or name.endswith("::"):
        return full
    if name.endswith(">"):
        name = name[_qualified_start(name):]
    return name + at + version


def _open_of(text: str, close: int) -> int:
    """Index of the bracket that `text[close]` closes (-1 when none), counting only
    that kind of bracket."""
    c, o = text[close], _CLOSE[text[close]]
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


def signature(name: str, system_name: str) -> str:
    """The full demangled signature of a function shown as `name`, when it says more
    (parameters, qualifiers, clone suffixes); "" otherwise."""
    if not system_name or system_name == name or system_name.startswith("["):
        return ""
    full = demangle(system_name)
    return full if full != name else ""
