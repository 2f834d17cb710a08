"""Which messages a worker takes first. A killed worker's capture, a message lost with a
Redis restart and the sweep that finds them must not wait behind every upload already
queued: they did (one worker, three uploads queued, the sweep and then the dead worker's
capture ran after all three; tests/web/test_exactly_once.py).

kombu's Redis transport keeps one list per priority step (0, 3, 6, 9) and a worker pops
from the lowest number first; perfweb.broker's filesystem transport (`make run`) names
its message files so that they sort the same way. Within a priority, first in, first out.
"""

#: the sweep, and every capture it sends again (taken back from a dead worker, its
#: message lost with the broker or never sent)
FIRST = 0
#: everything else: uploads, Retry, re-analyses, webhooks, retention
#: (CELERY_TASK_DEFAULT_PRIORITY)
NEW = 6
