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

from ..identity import _CXX_CLONE, without_signature

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


#: special names libiberty prints whole even without DMGL_PARAMS (as `c++filt -p` does)
_SPECIAL = ("transaction clone for ", "non-virtual thunk to ", "virtual thunk to ",
            "covariant return thunk to ", "typeinfo for ", "typeinfo name for ",
            "vtable for ", "VTT for ", "construction vtable for ", "guard variable for ",
            "TLS init function for ", "TLS wrapper function for ", "reference temporary",
            "hidden alias for ", "template parameter object for ")


@functools.lru_cache(maxsize=200_000)
def short_name(full: str) -> str:
    """The name perf prints for a demangled C++ symbol: without parameters, qualifiers,
    a template's return type (identity.without_signature) and clone suffixes
    (`[clone .cold]`), its symbol version kept; special names (thunks, vtables) whole."""
    s, at, version = full.partition("@")
    if s.startswith(_SPECIAL):
        return full
    s = _CXX_CLONE.sub("", s)
    short = without_signature(s)
    return full if short == s else short + at + version


def signature(name: str, system_name: str) -> str:
    """The full demangled signature of a function shown as `name`, when it says more
    (parameters, qualifiers, clone suffixes); "" otherwise."""
    if not system_name or system_name == name or system_name.startswith("["):
        return ""
    full = demangle(system_name)
    return full if full != name else ""
