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


_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")


def without_parameters(name: str) -> str:
    """`ns::f(int) const` -> `ns::f`, as perf prints C++ names by default; templates,
    lambdas, `operator()` and `(anonymous namespace)` keep their parentheses."""
    base, at, version = name.partition("@")
    t = base.rstrip()
    stripped = True
    while stripped:
        stripped = False
        for q in _QUALIFIERS:
            if t.endswith(q):
                t = t[:-len(q)].rstrip()
                stripped = True
    if not t.endswith(")"):
        return name
    depth = 0
    for i in range(len(t) - 1, -1, -1):
        if t[i] == ")":
            depth += 1
        elif t[i] == "(":
            depth -= 1
            if depth == 0:
                head = t[:i]
                if not head or head.endswith(("operator", "<", ",", "(", " ")):
                    return name
                return head + at + version
    return name
