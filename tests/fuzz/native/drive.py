"""One fuzzing process: `count` inputs of one target, each a seeded random mutation of a
seed file (input i of a run is the same every time: random.Random(f"{seed}:{target}:{i}")),
with the compiled extensions sanitized (sanitized.py), no hypothesis in the loop.

Before each input runs, its number (8 bytes) and bytes are written to `--current`: when a
sanitizer aborts the process, the parent (run.py) finds there the input that did it.
`--replay` runs the kept inputs of crashes/ for the target instead (test_native.py
replays every one under the sanitizers). An input that ends in an
exception other than our own AnalysisError (a twin that differs fails as an assertion)
is kept in `--crashes` and the loop goes on. The last line on stdout is a JSON summary:
inputs run, seconds, findings, and how often each compiled function was called.

    python -m tests.fuzz.native.drive TARGET --first I --count N --seed S \
        --current FILE --crashes DIR [--plain] [--replay]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path

#: inputs kept per place a Python exception came from (the rest are counted)
KEEP_PER_SITE = 3
#: the targets that run compiled code, named as in targets.TARGETS
NATIVE_TARGETS = ("perf-data-alike", "perf-script-compiled", "saved-profile")
#: a target that parses nothing: input i is the decimal i, and inputs 3 and 5 call the
#: canary's heap overread and signed overflow (CANARY_BUGS). test_native runs a campaign on
#: it to prove the whole path: a sanitizer's abort in a fuzzing child is a finding, its
#: input is kept, and the chunk goes on from the next input
CANARY_TARGET = "canary"
CANARY_BUGS = {3: ("read_past_end", 16), 5: ("add_to_int_max", 1)}


def _canary(data: bytes) -> None:
    import importlib

    from .build import CANARY_NAME
    if int(data) in CANARY_BUGS:
        name, arg = CANARY_BUGS[int(data)]
        getattr(importlib.import_module(CANARY_NAME), name)(arg)


def inputs_of(target: str):
    from .. import seeds, shapes
    return {"perf-data-alike": (seeds.perf_data(), shapes.PerfData()),
            "perf-script-compiled": (seeds.perf_script(), None),
            "saved-profile": (seeds.saved_profiles(), shapes.SavedProfile())}[target]


def kept_inputs(target: str) -> list[Path]:
    """The inputs kept in tests/fuzz/crashes for `target` (bytes, or a seed's edits)."""
    from ..mutate import CRASHES
    return sorted(p for p in CRASHES.glob(f"{target}-*")
                  if p.name.split(".")[0].rsplit("-", 1)[0] == target)


def count_calls(names: list[str]) -> dict[str, int]:
    """Wraps each function of the compiled modules `names`, and each type (counting
    the objects made), so its calls are counted: the summary says which entry points the
    run reached. Callers look them up on the module at each call (`_intervals.intervals(...)`,
    `_script.Reader(...)`), so the wrappers are what they call."""
    import importlib
    calls: dict[str, int] = {}
    for name in names:
        mod = importlib.import_module(name)
        for attr in dir(mod):
            fn = getattr(mod, attr)
            if attr.startswith("__") or not (
                    type(fn).__name__ == "builtin_function_or_method" or isinstance(fn, type)):
                continue
            key = f"{name.rsplit('.', 1)[-1]}.{attr}"
            calls[key] = 0

            def counted(*args, _fn=fn, _key=key, **kwargs):
                calls[_key] += 1
                return _fn(*args, **kwargs)
            setattr(mod, attr, counted)
    return calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("target", choices=NATIVE_TARGETS + (CANARY_TARGET,))
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--seed", default="0")
    ap.add_argument("--current", type=Path, required=True)
    ap.add_argument("--crashes", type=Path, required=True)
    ap.add_argument("--replay", action="store_true",
                    help="the inputs kept in tests/fuzz/crashes for this target")
    ap.add_argument("--after-import-every", type=int, default=4,
                    help="the worker's and pages' kernels on every n-th imported profile")
    ap.add_argument("--plain", action="store_true",
                    help="the checkout's own extensions (to compare speed or replay)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the twins
    loaded: list[str] = []
    if not args.plain:
        from . import sanitized
        folder = sanitized.install()
        loaded = sanitized.check_loaded(folder)
    from analysis.errors import AnalysisError

    from .. import targets, twins
    from ..edits import Choices, mutate
    from ..mutate import crash_input
    from .build import extensions
    calls = count_calls([e["name"] for e in extensions()])
    twins.AFTER_IMPORT_EVERY = args.after_import_every
    canary = args.target == CANARY_TARGET
    fn = _canary if canary else targets.TARGETS[args.target]
    kept = kept_inputs(args.target) if args.replay else []
    seeds, shape = ([], None) if args.replay or canary else inputs_of(args.target)

    def inputs():
        if args.replay:
            yield from enumerate(crash_input(p) for p in kept)
            return
        for i in range(args.first, args.first + args.count):
            _record(current, i, b"")  # (a fault while making it is this input's too)
            if canary:
                yield i, str(i).encode()
                continue
            c = Choices(rng=random.Random(f"{args.seed}:{args.target}:{i}"))
            yield i, mutate(c.pick(seeds), seeds, c, shape)

    findings: list[dict] = []
    seen: dict[str, int] = {}  # finding site -> how many inputs ended there
    start, cpu, n = time.monotonic(), time.process_time(), 0
    with open(args.current, "wb", buffering=0) as current:
        for i, data in inputs():
            n += 1
            _record(current, i, data)
            try:
                fn(data)
            except AnalysisError:
                pass
            except Exception as e:  # noqa: BLE001 - a finding: kept, and the loop goes on
                where = traceback.extract_tb(e.__traceback__)[-1]
                site = f"{Path(where.filename).name}:{where.lineno} {type(e).__name__}"
                seen[site] = seen.get(site, 0) + 1
                if seen[site] <= KEEP_PER_SITE:
                    findings.append(_keep(args.crashes, args.target, i, data, site, e))
    print(json.dumps({"target": args.target, "first": args.first, "inputs": n,
                      "seconds": round(time.monotonic() - start, 2),
                      "cpu_seconds": round(time.process_time() - cpu, 2), "findings": findings,
                      "sites": seen,
                      "calls": calls, "sanitized": loaded}))
    return 0


def _record(current, i: int, data: bytes) -> None:
    current.seek(0)
    current.write(i.to_bytes(8, "little") + data)
    current.truncate()


def _keep(crashes: Path, target: str, i: int, data: bytes, site: str,
          e: Exception) -> dict:
    crashes.mkdir(parents=True, exist_ok=True)
    name = f"{target}-{hashlib.sha256(data).hexdigest()[:12]}"
    (crashes / f"{name}.bin").write_bytes(data)
    return {"input": i, "file": f"{name}.bin", "kind": "exception", "site": site,
            "error": f"{type(e).__name__}: {str(e)[:200]}"}


if __name__ == "__main__":
    sys.exit(main())
