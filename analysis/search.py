"""The explorer's search box: function names matched by text or by a regular expression.

The text comes from anyone holding a share link (`?search=` in a URL someone sends), so it
must cost little whatever it says. Python's `re` backtracks: `^(.|.){0,22}#` took 7 s on
one capture and held a web worker. Here a pattern is compiled by RE2, whose matching time
is linear in the name's length (no backtracking), with its program size and memory
bounded, and matching stops at a deadline. Backreferences and lookaround, which only a
backtracking engine can run, are refused with a message instead of being run slowly;
text that is no regular expression at all (`libstdc++`, `operator()(`) is plain text, and
a name also matches when it contains the text as typed.
"""
from __future__ import annotations

import re
import time

import re2

from .errors import AnalysisError
from .profile import Profile

MAX_LENGTH = 200  # characters of a search
#: RE2 program instructions: `.{200}` needs about 1,600, `\pL` (every letter) 1,200
MAX_PROGRAM = 4000
MAX_MEMORY = 8 << 20  # bytes RE2 may use for one pattern (its DFA cache included)
#: seconds of matching per request; RE2 is linear, yet a pattern whose DFA explodes runs
#: at about 1.5 us per character of name, which a capture with many long names multiplies
BUDGET_S = 0.5
#: characters of one name a regular expression reads (a plain-text search reads all):
#: the budget is checked between names, and one 20 MB name ran 30 s inside a single
#: match; C++ names this long are rare, and their start names the function
MAX_NAME_SCAN = 4096


class SearchError(AnalysisError):
    """A search that cannot run; the message tells the person what to change."""


def _options() -> re2.Options:
    opts = re2.Options()
    opts.case_sensitive = False
    opts.never_capture = True  # only "does it match" is asked
    opts.max_mem = MAX_MEMORY
    opts.log_errors = False  # a person's typo is not a server error
    return opts


_TOO_COMPLEX = ("This regular expression is too complex to search with; use a shorter "
                "one or plain text.")
#: what only a backtracking engine runs: backreferences, lookaround, atomic groups
_BACKTRACKING = re.compile(r"\\[1-9]|\(\?P=|\(\?<?[=!]|\(\?>")


def compile_pattern(text: str):
    """The RE2 program for `text`, or None when `text` is no regular expression RE2
    reads (`foo(`, `libstdc++`, `operator[]`): such text is searched for as it is.
    SearchError when it asks for what only a backtracking engine runs, or for a program
    too large to run cheaply."""
    if len(text) > MAX_LENGTH:
        raise SearchError(f"A search is at most {MAX_LENGTH} characters.")
    try:
        rx = re2.compile(text, _options())
    except re2.error as e:
        reason = e.args[0].decode(errors="replace") if e.args and \
            isinstance(e.args[0], bytes) else str(e)
        if reason.startswith(("invalid repetition size", "pattern too large")):
            raise SearchError(_TOO_COMPLEX) from None
        if _BACKTRACKING.search(text) is None:
            return None
        raise SearchError(
            f"This search cannot run ({reason}): backreferences and lookaround are not "
            "supported. Search for text or an RE2 regular expression.") from None
    finally:
        re2.purge()  # the module's own cache would keep up to 128 programs alive
    if rx.programsize > MAX_PROGRAM:
        raise SearchError(_TOO_COMPLEX)
    return rx


class FunctionSearch:
    """Which functions of a profile a search matches: a name matches when it contains the
    text (any case), or when the text is a regular expression found in it. Each function
    is tested once; past BUDGET_S of matching the search stops with SearchError."""

    def __init__(self, profile: Profile, text: str, budget_s: float = BUDGET_S) -> None:
        self.text = text
        self._needle = text.lower()
        self._rx = compile_pattern(text)
        self._names = profile.functions
        self._hits: dict[int, bool] = {}
        self._deadline = time.monotonic() + budget_s

    def hit(self, fid: int) -> bool:
        known = self._hits.get(fid)
        if known is not None:
            return known
        if time.monotonic() > self._deadline:
            raise SearchError(f"This search took longer than {BUDGET_S:g} s and was "
                              "stopped; search for plain text or a simpler pattern.")
        name = self._names[fid].name
        found = self._needle in name.lower() or \
            (self._rx is not None and self._rx.search(name[:MAX_NAME_SCAN]) is not None)
        self._hits[fid] = found
        return found
