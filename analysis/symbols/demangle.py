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
