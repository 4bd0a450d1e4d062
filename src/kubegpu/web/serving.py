"""Running an ASGI app under uvicorn the way every kubegpu server does (serve, extender, shadow).

No access log (the servers keep their own metrics), no Server header, the request head capped at
16 KiB by whichever HTTP parser uvicorn runs (`web.http_limits`). The
listening socket is bound here, before uvicorn starts, so an address in use or not available is
a one-line UsageError (exit 2) rather than uvicorn's own exit.
"""

from __future__ import annotations

import socket

from kubegpu.errors import UsageError
from kubegpu.web.http_limits import MAX_HEAD_BYTES, http_protocol


def listen(address: str, port: int) -> socket.socket:
    """A bound TCP socket on address:port (UsageError naming both when that is impossible)."""
    try:
        family, kind, proto, _, where = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as err:
        raise UsageError(f"cannot listen on {address}:{port}: {getattr(err, 'strerror', None) or err}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
    except OSError as err:
        sock.close()
        raise UsageError(f"cannot listen on {address}:{port}: {err.strerror or err}") from None
    return sock


def run_server(app, *, address: str, port: int, log_level: str) -> None:
    """Serve `app` on address:port until interrupted."""
    import uvicorn  # lazy: uvicorn is needed only once a server starts, not for --help or argument errors

    sock = listen(address, port)
    config = uvicorn.Config(app, host=address, port=port, log_level=log_level, access_log=False,
                            server_header=False, http=http_protocol(), h11_max_incomplete_event_size=MAX_HEAD_BYTES)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
