from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('captures', '0006_capture_rate_result_comparison'),
    ]

    operations = [
        migrations.AddField(
            model_name='symbolfile',
            name='kind',
            field=models.CharField(choices=[('symbols', 'symbol file'), ('source', 'source archive')], default='symbols', max_length=16),
        ),
    ]
