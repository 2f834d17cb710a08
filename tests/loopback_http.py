"""A stand-in HTTP server on loopback, for a component's failure cases a real server cannot
be made to produce on demand (a bucket cutting a body short, a hostile debuginfod)."""
import http.server
import threading
from contextlib import contextmanager


@contextmanager
def serving(handler):
    """A ThreadingHTTPServer of `handler` on a free loopback port, serving in a thread
    until the block ends; yields its base URL."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
