"""Run `kubegpu extender`'s ASGI app under uvicorn on a free loopback port, in a thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time

import uvicorn

from kubegpu.extender.app import create_app
from kubegpu.extender.ledger import Ledger
from kubegpu.extender.metrics import ExtenderMetrics
from kubegpu.extender.service import Extender
from kubegpu.extender.state import ExtenderStore
from kubegpu.web.http_limits import MAX_HEAD_BYTES, http_protocol


def make_extender(state, *, policy: str = "fgd", ledger: str | None = None, max_work_lost: float = 8.0,
                  assume_ttl: float = 30.0, assume: bool = True) -> Extender:
    store = ExtenderStore(policy=policy, assume_ttl=assume_ttl, seed=1)
    store.install(state)
    book = Ledger(ledger)
    return Extender(store, book, ExtenderMetrics(store, book), max_work_lost=max_work_lost, assume=assume)


@contextlib.contextmanager
def serving(extender: Extender, *, prefix: str = "", max_body: int = 40 << 20):
    """Yield the base URL (http://127.0.0.1:PORT) while the server runs."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # the parser and head cap `kubegpu extender` runs with (web.serving.run_server)
    config = uvicorn.Config(create_app(extender, prefix=prefix, max_body=max_body), log_level="critical",
                            access_log=False, lifespan="off", http=http_protocol(),
                            h11_max_incomplete_event_size=MAX_HEAD_BYTES)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
