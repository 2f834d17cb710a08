"""The broker as perfweb uses it: Celery's Redis transport with one kombu 5.7 bug worked
around, the filesystem transport of `make run` with message priorities, and the Redis
server's run id, by which the sweep knows that queued messages were lost.

When Redis dies while a prefork worker holds an unacknowledged task (every running task
here: acks_late), the consumer closes its connection to reconnect; closing the channel
restores the unacknowledged messages through a transport whose client kombu has already
dropped, and `_connparams` fails on `None.hostname` with an AttributeError. That is not a
connection error, so the consumer treats it as unrecoverable and the worker exits
(reproduced by tests/web/test_broker_outage.py with the deployed command line). Raising
the connection error kombu expects lets it skip the restore and reconnect; the messages
stay in Redis's unacked set, which kombu restores after the visibility timeout, and the
capture's claim (perfweb/captures/claims.py) keeps a redelivery from running twice.
"""
import os
import uuid
from time import monotonic

import redis
from kombu.exceptions import ChannelError
from kombu.transport import filesystem as kombu_filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.json import dumps
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


class FilesystemChannel(kombu_filesystem.Channel):
    """kombu's filesystem channel takes the message files in the order of their names,
    which begin with the time they were written: no priorities. Here a name begins with
    the message's priority (0 first, as Redis takes them) and a zero-padded time
    (kombu's is not padded, so its order breaks when the millisecond count gains a
    digit); the rest is kombu's, which reading relies on (`<...>.<queue>.msg`)."""

    def _put(self, queue, payload, **kwargs):
        priority = self._get_message_priority(payload, reverse=False)
        name = f"{priority}_{int(monotonic() * 1000):015d}_{uuid.uuid4()}.{queue}.msg"
        path = os.path.join(self.data_folder_out, name)
        try:
            with open(path + ".part", "wb") as f:
                f.write(dumps(payload).encode())
            os.rename(path + ".part", path)  # (a reader never sees half a message)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {path!r} to directory") from exc


class FilesystemTransport(kombu_filesystem.Transport):
    Channel = FilesystemChannel


_clients: dict[str, redis.Redis] = {}


def run_id(url: str) -> str | None:
    """The run id of the Redis server at `url`: random, drawn at each start, so a message
    sent under another run than the current one was lost with a restart (or, if Redis
    persisted it, comes twice, which the claims make harmless). None when Redis does not
    answer (or refuses INFO)."""
    client = _clients.get(url)
    if client is None:
        client = _clients[url] = redis.Redis.from_url(
            url, socket_connect_timeout=2, socket_timeout=2)
    try:
        return client.info("server").get("run_id") or None
    except redis.RedisError:
        return None
