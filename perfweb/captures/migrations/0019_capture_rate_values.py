from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("captures", "0018_capture_sent_run"),
    ]

    operations = [
        migrations.AddField(
            model_name="capture",
            name="rate_values",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
