"""Serving the API with uvicorn: in the foreground (``rcjudge serve``) or in a thread.

:func:`running` starts a real server on a free loopback port in a background thread and
stops it on exit: what the concurrency tests and ``bench/api_load.py`` talk to.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextmanager
def running(app: Any, host: str = "127.0.0.1", port: int | None = None) -> Iterator[str]:
    """Serve ``app`` in a thread; yield its base URL (``http://host:port``)."""
    import uvicorn

    port = port or free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                           lifespan="off", access_log=False))
    thread = threading.Thread(target=server.run, name="rcjudge-api-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the API server did not start on {host}:{port}")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def serve(app: Any, host: str, port: int) -> None:
    """Serve ``app`` until interrupted."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="info")
