"""`perfweb upload FILE --service NAME --build VERSION`: send a capture and its symbol
files to perfweb from a host or a CI job, optionally wait for the diagnosis.
`perfweb delete capture|build|service ID`: delete one with every file it owns.

Exit codes: 0 uploaded (and, with --wait, analyzed) or deleted; 1 the analysis failed;
2 the upload or deletion was refused (or found nothing) or the server could not be
reached; 3 --wait timed out; 4 --fail-on: the verdict of the comparison with the
previous build is one it names (a regression).
"""
from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import math
import os
import re
import sys
import time
import urllib.parse

from .multipart import FilePart, MultipartBody

EXIT_FAILED, EXIT_REFUSED, EXIT_TIMEOUT, EXIT_GATE = 1, 2, 3, 4
#: files one upload may carry: the server's default (PERFWEB_MAX_UPLOAD_FILES), checked
#: before sending, as the server stops reading the request there only after the bytes
#: of every file before it; a server set lower answers with its own limit
MAX_FILES = 100

#: --fail-on's choices: the verdicts (analysis/compare/verdict.py) each one fails on
FAIL_ON = {"regression": {"regression"}}


class ClientError(Exception):
    pass


class Client:
    def __init__(self, url: str, token: str, timeout: float = 300.0):
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ClientError(f"--url must be http(s)://host[:port], not {url!r}")
        self.parts = parts
        self.token = token
        self.timeout = timeout

    def _conn(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.parts.scheme == "https" else \
            http.client.HTTPConnection
        return cls(self.parts.netloc, timeout=self.timeout)

    def _path(self, path: str) -> str:
        return self.parts.path + path

    def _headers(self) -> dict:
        return {"Authorization": f"Token {self.token}", "Accept": "application/json",
                "User-Agent": "perfweb-upload/1"}

    def _answer(self, conn) -> tuple[int, object]:
        r = conn.getresponse()
        body = r.read()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = body.decode("utf-8", "replace")[:500]
        return r.status, data

    def get(self, path: str) -> tuple[int, object]:
        return self._request("GET", path)

    def delete(self, path: str) -> tuple[int, object]:
        return self._request("DELETE", path)

    def post_json(self, path: str, data) -> tuple[int, object]:
        return self._request("POST", path, json.dumps(data).encode())

    def _request(self, method: str, path: str, body: bytes | None = None
                 ) -> tuple[int, object]:
        conn = self._conn()
        headers = self._headers()
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, self._path(path), body=body, headers=headers)
            return self._answer(conn)
        except OSError as e:
            raise ClientError(f"cannot reach {self.parts.netloc}: {e}") from None
        finally:
            conn.close()

    def upload(self, body: MultipartBody, progress) -> tuple[int, object]:
        conn = self._conn()
        headers = dict(self._headers(), **{"Content-Type": body.content_type,
                                           "Content-Length": str(len(body))})
        try:
            conn.putrequest("POST", self._path("/api/v1/captures/"))
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            for chunk in body.chunks(progress):
                conn.send(chunk)
            return self._answer(conn)
        except OSError as e:
            raise ClientError(f"upload to {self.parts.netloc} failed: {e}") from None
        finally:
            conn.close()


class Progress:
    """A progress bar on a terminal, a few plain lines otherwise (CI logs)."""

    def __init__(self, total: int, stream=sys.stderr, enabled: bool = True):
        self.total, self.done, self.stream = max(total, 1), 0, stream
        self.enabled = enabled
        self.tty = stream.isatty()
        self.last_step = 0

    def __call__(self, n: int) -> None:
        if not self.enabled:
            return
        self.done += n
        frac = min(self.done / self.total, 1.0)
        if self.tty:
            bar = "#" * int(frac * 30)
            self.stream.write(f"\r[{bar:<30}] {100 * frac:5.1f}% "
                              f"{_mib(self.done)}/{_mib(self.total)} MiB")
            self.stream.flush()
        elif int(frac * 4) > self.last_step:  # 25, 50, 75, 100%
            self.last_step = int(frac * 4)
            # the step reached, not the fraction rounded (99.8% is no "100%")
            self.stream.write(f"uploaded {25 * self.last_step}% ({_mib(self.done)} MiB)\n")

    def finish(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f}"


def _error_text(data) -> str:
    if isinstance(data, dict):
        if "detail" in data:
            return str(data["detail"])
        return "; ".join(f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}"
                         for k, v in data.items())
    return str(data)


def upload(args, out=sys.stdout, err=sys.stderr) -> int:
    for path in [args.file, *args.symbols, *args.sources]:
        if not os.path.isfile(path):
            err.write(f"perfweb: {path} is not a file (archive a folder first: "
                      f"tar czf symbols.tar.gz FOLDER)\n")
            return EXIT_REFUSED
    if not args.token:
        err.write("perfweb: no API token: pass --token or set PERFWEB_TOKEN "
                  "(create one on the API tokens page)\n")
        return EXIT_REFUSED
    fields = {"service": args.service, "version": args.build, "label": args.label or "",
              "notes": args.notes or "", "git_revision": args.git_revision or "",
              "symbols_for_build": "true" if args.symbols_for_build else "false"}
    if args.team:
        fields["team"] = args.team
    if args.rate is not None:
        fields["rate"] = args.rate
        fields["rate_unit"] = args.rate_unit
    client = Client(args.url, args.token)
    digests = {} if args.resend_symbols else {s: _sha256(s) for s in args.symbols}
    held = _held(client, digests, args.team)
    if held and not args.quiet:
        kept = sum(os.path.getsize(s) for s in args.symbols if digests[s] in held)
        err.write(f"{sum(digests[s] in held for s in args.symbols)} of {len(args.symbols)} "
                  f"symbol files are held by the team already: not sent ({_mib(kept)} "
                  f"MiB)\n")
    files = 1 + len(args.sources) + sum(digests.get(s) not in held for s in args.symbols)
    if files > MAX_FILES:
        err.write(f"perfweb: upload refused: an upload holds at most {MAX_FILES} files (the "
                  f"capture, symbol files and source archives together); this one has "
                  f"{files}. Put the symbol files in a .zip or .tar.gz archive (its "
                  f"members are read).\n")
        return EXIT_REFUSED
    status, data = send(client, fields, args, digests, held, err)
    if status not in (200, 201):
        err.write(f"perfweb: upload refused ({status}): {_error_text(data)}\n")
        return EXIT_REFUSED
    capture = data
    dup = " (this file was already uploaded to this build)" if capture.get("duplicate") else ""
    out.write(f"capture {capture['id']}: {capture['url']}{dup}\n")
    if not args.wait and not args.fail_on:
        return 0
    return wait(client, capture["id"], args.wait_timeout, out, err, args.fail_on)


def send(client: Client, fields: dict, args, digests: dict, held: set, err):
    """The upload, naming each symbol file of `held` (digests the team holds) as
    DIGEST:NAME instead of sending it; when the server answers that some are gone
    (deleted since it was asked: 409 with `missing`), once more with those sent."""
    status, data = _send(client, fields, args, digests, held, err)
    if status == 409 and isinstance(data, dict) and data.get("missing"):
        status, data = _send(client, fields, args, digests, held - set(data["missing"]),
                             err)
    return status, data


def _send(client: Client, fields: dict, args, digests: dict, held: set, err):
    named = [("symbols_held", f"{digests[s]}:{os.path.basename(s)}")
             for s in args.symbols if digests.get(s) in held]
    body = MultipartBody(list(fields.items()) + named,
                         [FilePart("capture", args.file)] +
                         [FilePart("symbols", s) for s in args.symbols
                          if digests.get(s) not in held] +
                         [FilePart("sources", s) for s in args.sources])
    progress = Progress(len(body), err, enabled=not args.quiet)
    try:
        return client.upload(body, progress)
    finally:
        progress.finish()


def _held(client: Client, digests: dict, team: str | None) -> set:
    """The digests the server says the team holds; none when it cannot say (a server
    older than the question answers 404), and then every file is sent."""
    if not digests:
        return set()
    ask = {"sha256": sorted(set(digests.values()))}
    if team:
        ask["team"] = team
    status, data = client.post_json("/api/v1/symbols/held/", ask)
    if status != 200 or not isinstance(data, dict):
        return set()
    return set(data.get("held") or []) & set(digests.values())


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def wait(client: Client, capture_id: int, timeout: float, out, err,
         fail_on: list[str] = ()) -> int:
    end = time.monotonic() + timeout
    delay, last = 0.5, None
    while True:
        status, data = client.get(f"/api/v1/captures/{capture_id}/")
        if status != 200:
            err.write(f"perfweb: polling failed ({status}): {_error_text(data)}\n")
            return EXIT_REFUSED
        if data["status"] != last:
            last = data["status"]
            err.write(f"{last}\n")
        if data["finished"]:
            break
        if time.monotonic() > end:
            err.write(f"perfweb: still {last} after {timeout:.0f} s; see {data['url']}\n")
            return EXIT_TIMEOUT
        time.sleep(delay)
        delay = min(delay * 1.5, 5.0)
    if data["status"] == "failed":
        err.write(f"perfweb: analysis failed: {data['error']}\n")
        return EXIT_FAILED
    status, findings = client.get(f"/api/v1/captures/{capture_id}/findings/")
    if status != 200:
        err.write(f"perfweb: reading findings failed ({status}): {_error_text(findings)}\n")
        return EXIT_REFUSED
    for f in findings:
        out.write(f"[{f['severity']}] {f['title']}\n")
        if f.get("summary"):
            out.write(f"    {f['summary']}\n")
    return gate(data, fail_on, out, err) if fail_on else 0


def gate(capture: dict, fail_on: list[str], out, err) -> int:
    """--fail-on: EXIT_GATE when the verdict of the comparison with the previous build
    is one of those named, else 0; either way the verdict and its reason are printed."""
    if "verdict" not in capture:
        err.write("perfweb: this server does not say the verdict of its comparisons "
                  "(it predates --fail-on); upgrade it or drop --fail-on\n")
        return EXIT_REFUSED
    v = capture["verdict"]
    if not v:
        label = f"labelled {capture['label']!r}" if capture.get("label") else "unlabelled"
        out.write(f"verdict: none (no analysed {label} capture of an earlier build of "
                  f"{capture['service']} to compare with); passing\n")
        return 0
    out.write(f"verdict: {v['verdict']} against build {v['before']['build']} (capture "
              f"{v['before']['id']}): {v['reason']}\n")
    if v.get("url"):
        out.write(f"    {v['url']}\n")
    failing = set().union(*(FAIL_ON[name] for name in fail_on))
    if v["verdict"] in failing:
        err.write(f"perfweb: failing (--fail-on {','.join(fail_on)}): {v['verdict']} "
                  f"against build {v['before']['build']}: {v['reason']}\n")
        return EXIT_GATE
    out.write(f"{v['verdict']}: not a regression; passing\n")
    return 0


def delete(args, out=sys.stdout, err=sys.stderr) -> int:
    """DELETE /api/v1/{captures,builds,services}/ID/: what went, as the server says."""
    if not args.token:
        err.write("perfweb: no API token: pass --token or set PERFWEB_TOKEN "
                  "(create one on the API tokens page)\n")
        return EXIT_REFUSED
    status, data = Client(args.url, args.token).delete(f"/api/v1/{args.kind}s/{args.id}/")
    if status != 200:
        err.write(f"perfweb: deleting {args.kind} {args.id} refused ({status}): "
                  f"{_error_text(data)}\n")
        return EXIT_REFUSED
    out.write(f"deleted {data['summary']}\n")
    return 0


def _server_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=os.environ.get("PERFWEB_URL", "http://127.0.0.1:8000"),
                   help="the perfweb server (default $PERFWEB_URL or %(default)s)")
    p.add_argument("--token", default=os.environ.get("PERFWEB_TOKEN", ""),
                   help="an API token (default $PERFWEB_TOKEN, which keeps it out of ps)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="perfweb", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    u = sub.add_parser("upload", help="upload a capture with its symbol files")
    u.add_argument("file", help="perf.data, perf script/report text or folded stacks")
    u.add_argument("--service", required=True)
    u.add_argument("--build", required=True, help="the build version, e.g. 1.4.2")
    u.add_argument("--label", help="e.g. idle, load-test")
    u.add_argument("--rate", type=_rate, metavar="R",
                   help="the throughput your load generator measured while the capture "
                        "was taken, e.g. 53556, several runs' (7.5,7.9,8.1) or a "
                        "mean with its spread (7.8±0.3 n=5): "
                        "comparisons judge by CPU per unit of work and the runs' spread")
    u.add_argument("--rate-unit", default="req/s", metavar="UNIT",
                   help="the unit of --rate (default req/s), e.g. rows/s, MB/s")
    u.add_argument("--symbols", action="append", default=[], metavar="PATH",
                   help="a symbol file or archive (perf archive output, debug files, "
                        f"kallsyms, maps); repeat for several (at most {MAX_FILES} files "
                        "in one upload, the capture included: archive more)")
    u.add_argument("--sources", action="append", default=[], metavar="PATH",
                   help="a .tar.gz or .zip of the build's source tree: hot lines are "
                        "shown in it")
    u.add_argument("--resend-symbols", action="store_true",
                   help="send every symbol file, also those the team holds already (by "
                        "default a file the server has, by its SHA-256, is only named)")
    u.add_argument("--capture-only-symbols", dest="symbols_for_build",
                   action="store_false", help="attach the symbols to this capture only, "
                                              "not to every capture of the build")
    u.add_argument("--team", help="needed only when you are in several teams")
    u.add_argument("--git-revision")
    u.add_argument("--notes")
    _server_options(u)
    u.add_argument("--wait", action="store_true",
                   help="wait for the analysis and print the findings")
    u.add_argument("--wait-timeout", type=float, default=1800, metavar="SECONDS")
    u.add_argument("--fail-on", type=_fail_on, default=[], metavar="VERDICT",
                   help="with --wait (implied): exit 4 when the comparison with the "
                        "previous build's capture of the same label says this "
                        f"({', '.join(FAIL_ON)}), printing its reason")
    u.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    d = sub.add_parser("delete", help="delete a capture, a build or a service with every "
                                      "file it owns (a build with its captures, a service "
                                      "with its builds)")
    d.add_argument("kind", choices=["capture", "build", "service"])
    d.add_argument("id", type=int)
    _server_options(d)
    return p


def _fail_on(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    wrong = [n for n in names if n not in FAIL_ON]
    if wrong or not names:
        raise argparse.ArgumentTypeError(
            f"{(wrong or [text])[0]!r} is not a verdict to fail on (choose from "
            f"{', '.join(FAIL_ON)})")
    return names


#: a rate with its spread, "7.8±0.3 n=5" (analysis/compare/rates.py: the server reads it)
_SPREAD = re.compile(r"^\s*([0-9][0-9.eE+-]*)\s*(?:±|\+-|\+/-)\s*([0-9][0-9.eE+-]*)\s*"
                     r"(?:,\s*)?(?:n\s*=\s*|over\s+|x\s*)(\d+)(?:\s*runs?)?\s*$", re.I)


def _rate(text: str) -> str:
    # the check `python -m analysis` makes too (analysis/compare/rates.py): this client
    # installs alone, with no import of the engine, so it keeps its own copy. Several
    # measurements are separated by commas or spaces (53556, not 53,556); a rate with its
    # spread goes as written, the server making its equivalent runs.
    spread = _SPREAD.match(text)
    if spread:
        try:
            mean, sd, runs = float(spread[1]), float(spread[2]), int(spread[3])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a rate with its spread") \
                from None
        if mean > 0 and sd >= 0 and runs >= 2 and math.isfinite(mean + sd):
            return text.strip()
        raise argparse.ArgumentTypeError("a rate must be a positive number, its spread not "
                                         "negative, over 2 runs or more")
    parts = [p for p in re.split(r"[\s,;]+", text.strip().replace("_", "")) if p]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number, or numbers separated "
                                         f"by commas") from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError("a rate must be a positive number")
    return ",".join(repr(v) for v in values)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return delete(args) if args.command == "delete" else upload(args)
    except ClientError as e:
        sys.stderr.write(f"perfweb: {e}\n")
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
