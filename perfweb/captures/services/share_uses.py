"""A share link's uses, one row per link and day (models.ShareLinkUse).

Every request through a link is a use (the page and each of its data requests), so a
row per request grew with the traffic: one link opened in a loop wrote a row a request.
Now a request updates its link's row of the day with one conditional UPDATE (the count,
the last use, and the address when it is a new one and there is room), and only the
day's first request inserts; two first requests at once both find no row, one inserts
and the other, refused by the unique constraint, updates.
"""
from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import (BooleanField, Case, CharField, F, IntegerField, Q, Sum,
                              Value, When)
from django.db.models.functions import Concat

from ..models import ShareLinkUse

#: the longest address text kept (IPv6 in full with an IPv4 tail is 45 characters)
MAX_ADDRESS = 45


def record_use(link, address: str, user_agent: str, now) -> None:
    """Count one use of `link` at `now` (aware, UTC) from `address`."""
    address = "".join(address.split())[:MAX_ADDRESS]  # (spaces separate the kept ones)
    user_agent = user_agent[:255]
    rows = ShareLinkUse.objects.filter(link=link, day=now.date())
    if _count(rows, address, user_agent, now):
        return
    try:
        with transaction.atomic():
            ShareLinkUse.objects.create(
                link=link, day=now.date(), count=1, first_at=now, last_at=now,
                last_address=address, last_user_agent=user_agent,
                addresses=f" {address} " if address else " ", address_count=bool(address))
    except IntegrityError:  # another request made the day's row first
        _count(rows, address, user_agent, now)


def _count(rows, address: str, user_agent: str, now) -> int:
    """One UPDATE of the day's row: every SET reads the row as it was, so the address
    test and the count of kept addresses agree even with concurrent requests."""
    counted = {"count": F("count") + 1, "last_at": now, "last_address": address,
               "last_user_agent": user_agent}
    if address:
        new = ~Q(addresses__contains=f" {address} ")
        room = Q(address_count__lt=ShareLinkUse.ADDRESSES_KEPT)
        counted.update(
            addresses=Case(When(new & room, then=Concat(F("addresses"), Value(f"{address} "))),
                           default=F("addresses"), output_field=CharField()),
            address_count=Case(When(new & room, then=F("address_count") + 1),
                               default=F("address_count"), output_field=IntegerField()),
            more_addresses=Case(When(new & ~room, then=Value(True)),
                                default=F("more_addresses"), output_field=BooleanField()))
    return rows.update(**counted)


#: days of uses the capture page lists per link
DAYS_LISTED = 30


def link_uses(links, today) -> dict[int, dict]:
    """Per link id: its uses in all (`total`) and its last DAYS_LISTED days of uses,
    newest first (`days`), for the capture page's list of links."""
    out = {link.pk: {"total": 0, "days": []} for link in links}
    rows = ShareLinkUse.objects.filter(link__in=list(out))
    for pk, total in rows.values_list("link").annotate(n=Sum("count")).order_by():
        out[pk]["total"] = total
    for row in rows.filter(day__gt=today - timedelta(days=DAYS_LISTED)).order_by("-day"):
        out[row.link_id]["days"].append(row)
    return out
