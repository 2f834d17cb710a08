from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('captures', '0017_share_link_daily_use'),
    ]

    operations = [
        migrations.AddField(
            model_name='capture',
            name='sent_run',
            field=models.CharField(blank=True, default='', max_length=40),
        ),
    ]
