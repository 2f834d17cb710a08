"""gunicorn's settings as deployed: `gunicorn -c python:perfweb.gunicorn_conf perfweb.wsgi`
(docker-compose.yml, the Dockerfile). Options on the command line override these.

gunicorn logs through its own loggers, which Django's LOGGING does not reach: its access
log writes each request line (`GET /debuginfod/pw_.../buildid/...`), its error log the
path of a request it failed to handle. The logger class below puts the token scrubber
(perfweb/token_scrub.py) on every handler gunicorn sets up, whichever options choose
them (--access-logfile, --error-logfile, --log-config-dict, syslog)."""
import logging

from gunicorn.glogging import Logger

from perfweb.token_scrub import scrub_handlers

#: the access log, on stdout as the container's log (scrubbed)
accesslog = "-"


class TokenScrubbingLogger(Logger):
    def setup(self, cfg):
        super().setup(cfg)
        scrub_handlers(self.error_log, self.access_log, logging.getLogger())


logger_class = "perfweb.gunicorn_conf.TokenScrubbingLogger"

#: gunicorn 27 opens a control socket for `gunicornc` at one fixed path per user
#: ($HOME/.gunicorn/gunicorn.ctl), so every instance on a host (two deployments, the test
#: suite's servers) would take it from the one started before; nothing here uses it
control_socket_disable = True
