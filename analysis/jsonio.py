"""JSON out of the engine, through orjson: the standard library's encoder wrote a diverse
capture's report in 1.9 million `write` calls (5.7 s of 12.4 s, issue 16). Integer keys
are allowed (the report's per-thread tables), and NaN, which is no JSON, becomes null."""
from __future__ import annotations

from typing import Any, TextIO

import orjson

loads = orjson.loads


def dumps(obj: Any, indent: bool = False) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS |
                        (orjson.OPT_INDENT_2 if indent else 0))


def write(obj: Any, out: TextIO) -> None:
    """`obj` as indented JSON and a newline: as bytes to a stream that has them (the
    console), as text to one that has not (a StringIO)."""
    data = dumps(obj, indent=True) + b"\n"
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        buffer.write(data)
    else:
        out.write(data.decode())
