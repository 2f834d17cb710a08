"""Ids that come from a URL, a query or a form: ASCII digits only, at most 18 of them (a
PostgreSQL bigint holds any 18-digit number). str.isdigit() is no test: it is true for "²"
(which int() refuses) and for "١" (which int() reads as 1), so every view parses ids here
and answers a malformed one as it answers an unknown one."""
from __future__ import annotations

import re

#: for URL patterns (a DRF router's lookup_value_regex)
ID_PATTERN = r"[0-9]{1,18}"
ID = re.compile(ID_PATTERN)


def parse_id(value) -> int | None:
    """The id `value` spells (a str, or an int a URL converter made), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not ID.fullmatch(value):
        return None
    return int(value)
