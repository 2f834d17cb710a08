"""Tokens get a scope. Those made before keep acting as they did, on everything their
user may do (admin); new ones are upload unless another scope is chosen."""
from django.db import migrations, models

SCOPES = [("read", "read: debuginfod, downloads, reading the API"),
          ("upload", "upload: read, and upload captures and symbol files"),
          ("admin", "admin: everything your account may do, deleting included")]


class Migration(migrations.Migration):

    dependencies = [
        ('captures', '0015_source_index'),
    ]

    operations = [
        # the existing rows take this default ...
        migrations.AddField(
            model_name='apitoken',
            name='scope',
            field=models.CharField(choices=SCOPES, default='admin', max_length=8),
        ),
        # ... new rows this one
        migrations.AlterField(
            model_name='apitoken',
            name='scope',
            field=models.CharField(choices=SCOPES, default='upload', max_length=8),
        ),
    ]
