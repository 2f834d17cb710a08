"""`manage.py ensure_bucket`: with STORAGE_BACKEND=s3, make the bucket when it does not
exist yet (docker-compose runs it before the web server and the worker start, so a new
MinIO needs no client of its own); with the filesystem storage, nothing to do.

Waits for the endpoint (MinIO starting beside us) up to --wait seconds."""
from __future__ import annotations

import time

from django.core.files.storage import default_storage
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the S3 bucket of STORAGE_BACKEND=s3 if it does not exist."

    def add_arguments(self, parser):
        parser.add_argument("--wait", type=float, default=60.0,
                            help="seconds to wait for the endpoint to answer")

    def handle(self, *args, wait: float, **options):
        bucket = getattr(default_storage, "bucket", None)
        if bucket is None:
            self.stdout.write("the storage is not a bucket (STORAGE_BACKEND is not s3)")
            return
        from botocore.exceptions import BotoCoreError, ClientError
        client = default_storage.connection.meta.client
        name = default_storage.bucket_name
        end = time.monotonic() + wait
        while True:
            try:
                client.head_bucket(Bucket=name)
                self.stdout.write(f"bucket {name} exists")
                return
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
                    raise CommandError(f"bucket {name}: {e}") from e
                try:
                    client.create_bucket(Bucket=name, **self._where(client))
                    self.stdout.write(f"bucket {name} created")
                    return
                except ClientError as e2:  # made meanwhile by the other service
                    code = e2.response.get("Error", {}).get("Code")
                    if code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                        continue
                    raise CommandError(f"bucket {name}: {e2}") from e2
            except BotoCoreError as e:  # the endpoint is not up yet
                if time.monotonic() > end:
                    raise CommandError(f"the S3 endpoint did not answer: {e}") from e
                time.sleep(1)

    @staticmethod
    def _where(client) -> dict:
        region = client.meta.region_name
        if region and region != "us-east-1":  # AWS refuses a constraint of us-east-1
            return {"CreateBucketConfiguration": {"LocationConstraint": region}}
        return {}
