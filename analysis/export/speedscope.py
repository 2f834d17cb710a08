"""speedscope's file format (https://www.speedscope.app/file-format-schema.json): one
"sampled" profile per thread, frames shared, weights in samples."""
from __future__ import annotations

import json
from typing import TextIO

from ..aggregate.functions import stack_functions
from ..aggregate.selection import stack_thread_weights
from ..profile import NO_ID, Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def to_speedscope(p: Profile, name: str = "perfweb capture") -> dict:
    frame_ix: dict[int, int] = {}
    frames: list[dict] = []

    def frame(fid: int) -> int:
        ix = frame_ix.get(fid)
        if ix is None:
            fn = p.functions[fid]
            ix = frame_ix[fid] = len(frames)
            frames.append({"name": fn.name, "file": p.mappings[fn.mapping_id].path})
        return ix

    per_thread: dict[int, dict[int, int]] = {}
    for (sid, tid), w in stack_thread_weights(p, None).items():
        per_thread.setdefault(tid, {})[sid] = w
    profiles = []
    for tid, weights in sorted(per_thread.items()):
        samples, counts = [], []
        for sid, w in weights.items():
            samples.append([frame(f) for f in reversed(stack_functions(p, p.stacks[sid]))])
            counts.append(w)
        profiles.append({"type": "sampled", "name": f"thread {tid if tid != NO_ID else '?'}",
                         "unit": "none", "startValue": 0, "endValue": sum(counts),
                         "samples": samples, "weights": counts})
    return {"$schema": SCHEMA, "shared": {"frames": frames}, "profiles": profiles,
            "name": name, "exporter": "perfweb"}


def write_speedscope(p: Profile, out: TextIO, name: str = "perfweb capture") -> None:
    json.dump(to_speedscope(p, name), out)
