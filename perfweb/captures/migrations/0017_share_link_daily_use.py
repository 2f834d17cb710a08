"""ShareLinkUse: one row per link and day instead of one per request. The rows written
so far are folded into the daily ones: per link and UTC day, the count, the first and
last use, the last address and user agent and the first distinct addresses."""
from django.db import migrations, models

KEPT = 8  # ShareLinkUse.ADDRESSES_KEPT when this migration was written


def fold_into_days(apps, schema_editor):
    """One pass over the rows in (link, time) order, remembering per (link, day) the
    row to keep (the day's last) and what it will say; those rows get their day, and
    every row left without one is deleted in one statement."""
    Use = apps.get_model("captures", "ShareLinkUse")
    days: dict[tuple[int, object], dict] = {}
    rows = Use.objects.order_by("link_id", "last_at", "pk").values_list(
        "pk", "link_id", "last_at", "last_address")
    for pk, link_id, at, address in rows.iterator(chunk_size=5000):
        day = days.setdefault((link_id, at.date()), {
            "count": 0, "first_at": at, "addresses": [], "more_addresses": False})
        day.update(keep=pk, count=day["count"] + 1)
        if address and address not in day["addresses"]:
            if len(day["addresses"]) < KEPT:
                day["addresses"].append(address)
            else:
                day["more_addresses"] = True
    for (_, date), day in days.items():
        addresses = day["addresses"]
        Use.objects.filter(pk=day["keep"]).update(
            day=date, count=day["count"], first_at=day["first_at"],
            addresses=" " + "".join(f"{a} " for a in addresses),
            address_count=len(addresses), more_addresses=day["more_addresses"])
    Use.objects.filter(day__isnull=True).delete()
    if schema_editor.connection.vendor == "postgresql":
        # the constraint checks the updates queued run now, not at the ALTER TABLEs that
        # follow in this transaction (which refuse to run with pending trigger events)
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ("captures", "0016_token_scopes"),
    ]

    operations = [
        migrations.RemoveField(model_name="sharelinkuse", name="path"),
        migrations.RenameField(model_name="sharelinkuse", old_name="at", new_name="last_at"),
        migrations.AlterField(model_name="sharelinkuse", name="last_at",
                              field=models.DateTimeField()),
        migrations.RenameField(model_name="sharelinkuse", old_name="remote_addr",
                               new_name="last_address"),
        migrations.RenameField(model_name="sharelinkuse", old_name="user_agent",
                               new_name="last_user_agent"),
        migrations.AddField(model_name="sharelinkuse", name="day",
                            field=models.DateField(null=True)),
        migrations.AddField(model_name="sharelinkuse", name="count",
                            field=models.PositiveBigIntegerField(default=0)),
        migrations.AddField(model_name="sharelinkuse", name="first_at",
                            field=models.DateTimeField(null=True)),
        migrations.AddField(model_name="sharelinkuse", name="addresses",
                            field=models.CharField(default=" ", max_length=369)),
        migrations.AddField(model_name="sharelinkuse", name="address_count",
                            field=models.PositiveSmallIntegerField(default=0)),
        migrations.AddField(model_name="sharelinkuse", name="more_addresses",
                            field=models.BooleanField(default=False)),
        migrations.RunPython(fold_into_days, migrations.RunPython.noop),
        migrations.AlterField(model_name="sharelinkuse", name="day",
                              field=models.DateField()),
        migrations.AlterField(model_name="sharelinkuse", name="first_at",
                              field=models.DateTimeField()),
        migrations.AddConstraint(
            model_name="sharelinkuse",
            constraint=models.UniqueConstraint(fields=("link", "day"),
                                               name="one_use_row_per_link_and_day")),
    ]
