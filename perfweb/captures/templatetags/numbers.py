"""Numbers on the pages in one format: shares as percentages with the precision a small
share needs (0.42%, not 0%), changes with their sign (the true minus, U+2212, so "+" and
"−" are as wide). static/js/numbers.js mirrors these rules for what the pages draw."""
from __future__ import annotations

from django import template

register = template.Library()

MINUS = "−"


def percent_text(share: float | None, signed: bool = False) -> str:
    """0.0042 -> "0.42%", 0.3443 -> "34.4%", 1 -> "100%"; signed: "+1.5%", "−0.42%",
    "0%". One decimal from 1% up, two below (a share that rounds to 0.00% is "<0.01%")."""
    if share is None:
        return ""
    v = 100 * share
    sign = "+" if signed and v > 0 else MINUS if v < 0 else ""
    a = abs(v)
    if a == 0:
        return "0%"
    if a < 0.005:
        return f"{sign}<0.01%"
    text = f"{a:.1f}%" if a >= 1 else f"{a:.2f}%"
    return sign + ("100%" if text == "100.0%" else text)


@register.filter
def percent(share) -> str:
    return percent_text(None if share in (None, "") else float(share))


@register.filter
def signed_percent(share) -> str:
    return percent_text(None if share in (None, "") else float(share), signed=True)


@register.filter
def of_percent(value) -> str:
    """A value already in percent (the comparison's movers): 4.18 -> "4.18%"."""
    return percent_text(None if value in (None, "") else float(value) / 100)


@register.filter
def points(change) -> str:
    """A change in percentage points, always signed: 13.37 -> "+13.4 pp", -0.42 ->
    "−0.42 pp", 0 -> "0 pp"."""
    if change in (None, ""):
        return ""
    return percent_text(float(change) / 100, signed=True).replace("%", " pp")


def signed_text(change: float | None, digits: int = 2) -> str:
    """A change that is no share (CPUs busy), signed at `digits` decimals: "+0.12",
    "−1.97", "0.00" when it rounds to nothing."""
    if change is None:
        return ""
    text = f"{abs(change):.{digits}f}"
    if float(text) == 0:
        return text
    return ("+" if change > 0 else MINUS) + text


@register.filter
def signed(change) -> str:
    return signed_text(None if change in (None, "") else float(change))
