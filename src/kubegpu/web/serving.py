"""Running an ASGI app under uvicorn the way every kubegpu server does (serve, extender).

No access log (the servers keep their own metrics), no Server header, small header limits;
a port that cannot be bound is a one-line UsageError.
"""

from __future__ import annotations

from kubegpu.errors import UsageError


def run_server(app, *, address: str, port: int, log_level: str) -> None:
    """Serve `app` on address:port until interrupted."""
    import uvicorn

    config = uvicorn.Config(app, host=address, port=port, log_level=log_level, access_log=False,
                            server_header=False, h11_max_incomplete_event_size=16 * 1024)
    server = uvicorn.Server(config)
    try:
        server.run()
    except OSError as err:
        raise UsageError(f"cannot listen on {address}:{port}: {err.strerror or err}") from None
