"""The explorer's search box: function names matched by text or by a regular expression.

The text comes from anyone holding a share link (`?search=` in a URL someone sends), so it
must cost little whatever it says. Python's `re` backtracks: `^(.|.){0,22}#` took 7 s on
one capture and held a web worker. Here a pattern is compiled by RE2, whose matching time
is linear in the name's length (no backtracking), with its program size and memory
bounded, and matching stops past a budget of CPU time. Backreferences and lookaround,
which only a backtracking engine can run, are refused with a message instead of being run
slowly; text that is no regular expression at all (`libstdc++`, `operator()(`) or holds no
metacharacter (`futex`, `std::vector<int>`) is plain text, searched without RE2 and
without a budget (a substring test is linear, and the names are already in memory), and
a name also matches when it contains the text as typed.

The budget counts the CPU time of the thread that matches, not the clock: by the clock,
a loaded host (a web worker getting a sliver of a CPU) made a plain `futex` search, 20 ms
of work, pass 0.5 s and answer 400. RE2 counts no steps for Python; its cost per
character is 22 ns for most patterns and up to 1.7 us when the DFA explodes (measured
here), so a budget of characters either refuses ordinary patterns on large captures or
lets an exploding one run for seconds.
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
#: CPU seconds of matching per request; RE2 is linear, yet a pattern whose DFA explodes
#: runs at about 1.7 us per character of name, which a capture with many long names
#: multiplies
BUDGET_S = 0.5
#: characters a regular expression reads between two looks at the CPU clock (a look
#: costs 0.7 us, a short name's match 1.4 us)
CHECK_EVERY = 64 << 10
#: RE2's metacharacters: text without any is searched as text
_METACHARACTERS = frozenset("\\.+*?()|[]{}^$")
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
    """The RE2 program for `text`, or None when `text` is plain text (no metacharacter)
    or no regular expression RE2 reads (`foo(`, `libstdc++`, `operator[]`): such text is
    searched for as it is. SearchError when it asks for what only a backtracking engine
    runs, or for a program too large to run cheaply."""
    if len(text) > MAX_LENGTH:
        raise SearchError(f"A search is at most {MAX_LENGTH} characters.")
    if _METACHARACTERS.isdisjoint(text):
        return None
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
    text (any case), or when the text is a regular expression found in it. Every name is
    tested once, up front; past `budget_s` of this thread's CPU time a regular expression
    stops with SearchError (plain text has no budget: it cannot be slow)."""

    def __init__(self, profile: Profile, text: str, budget_s: float = BUDGET_S) -> None:
        self.text = text
        self._matched = _matches([f.name for f in profile.functions], text.lower(),
                                 compile_pattern(text), budget_s)

    def hit(self, fid: int) -> bool:
        return fid in self._matched


def _matches(names: list[str], needle: str, rx, budget_s: float) -> frozenset[int]:
    matched = []
    limit = time.thread_time() + budget_s
    scanned = 0
    for fid, name in enumerate(names):
        if needle in name.lower():
            matched.append(fid)
        elif rx is not None:
            head = name[:MAX_NAME_SCAN]
            if rx.search(head) is not None:
                matched.append(fid)
            scanned += len(head)
            if scanned >= CHECK_EVERY:
                scanned = 0
                if time.thread_time() > limit:
                    raise SearchError(
                        f"This search needed more than {budget_s:g} s of matching and was "
                        "stopped; search for plain text or a simpler pattern.")
    return frozenset(matched)
