"""The tests' HTTP stub servers: quiet when a client hangs up mid-request."""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any


class QuietThreadingHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that says nothing when a client goes away mid-request.

    Tests hang up on purpose (time-outs, cancelled calls, stopped nodes); socketserver would
    print a traceback for each into the test log, where it reads like a failure.
    """

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
