"""Celery's Redis transport with one kombu 5.7 bug worked around, so a worker outlives a
Redis restart.

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
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel
