#!/usr/bin/env python3
"""Prototype: tunewatch's exporter endpoints on aiohttp instead of the hand-written stack.

    PYTHONPATH=exporter build/altvenv/bin/python benchmarks/alt_aiohttp_serve.py \
        --metrics-file tunewatch.prom --web.listen-address 127.0.0.1:19847 [--web.config.file web.yml]

Only for benchmarks/bench_hostile.py `--servers ...,aiohttp` (the measurement of "does the
hand-written HTTP stack stay?"): it serves fixed `/metrics` bytes (a `tunewatch scan
--format prometheus` output read once), `/-/healthy`, `/-/ready`, a stub `POST /-/rescan`
(202) and nothing else. Same as serve where the comparison is about the HTTP stack:

* the soft RLIMIT_NOFILE raised to the hard limit (tunewatch.web.listen.raise_nofile_limit);
* the exporter-toolkit web config read by tunewatch.web.config.load_web_config (TLS context,
  `http_server_config.headers`, `basic_auth_users`), and basic auth checked by
  tunewatch.web.config.BasicAuth (cached verdicts, bcrypt at most 25 % of a CPU), in a thread;
* aiohttp's limits set to serve's: max_line_size 8 KiB, max_field_size 32 KiB (serve's
  whole header block), max_headers 100, client_max_size 64 KiB, keep-alive 120 s, the TLS
  handshake bounded by ssl_handshake_timeout (serve's --web.request-timeout, 10 s), the
  backlog at somaxconn; no access log (serve logs requests only at debug).

What aiohttp has no knob for (and this prototype therefore lacks): a connection cap,
per-peer caps, eviction, a timeout for a connection that never completes its request
headers, backoff on EMFILE beyond asyncio's fixed 1 s pause. See benchmarks/README.md,
"Hand-written stack vs aiohttp (measured)".
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from aiohttp import web

from tunewatch.web.listen import raise_nofile_limit, somaxconn
from tunewatch.web.config import REALM, BasicAuth, load_web_config, parse_listen_address

TEXT_004 = "text/plain; version=0.0.4; charset=utf-8"


def make_app(body: bytes, auth: BasicAuth, headers: dict[str, str], client_max_size: int) -> web.Application:
    @web.middleware
    async def basic_auth(request: web.Request, handler):
        if auth.enabled:
            verdict = await asyncio.get_running_loop().run_in_executor(
                None, auth.check, request.headers.get("Authorization"))
            if verdict is None:
                return web.Response(status=503, text="too many authentication checks\n", headers={"Retry-After": "1"})
            if not verdict:
                return web.Response(status=401, text="Unauthorized\n",
                                    headers={"WWW-Authenticate": f'Basic realm="{REALM}"'})
        response = await handler(request)
        response.headers.update(headers)
        return response

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Type": TEXT_004})

    async def healthy(_: web.Request) -> web.Response:
        return web.Response(text="Healthy\n")

    async def rescan(_: web.Request) -> web.Response:
        return web.Response(status=202, text="scan requested\n")

    app = web.Application(middlewares=[basic_auth], client_max_size=client_max_size)
    app.router.add_get("/metrics", metrics)  # add_get also answers HEAD
    app.router.add_get("/-/healthy", healthy)
    app.router.add_get("/-/ready", healthy)
    app.router.add_post("/-/rescan", rescan)
    return app


async def serve(args: argparse.Namespace) -> None:
    web_config = load_web_config(args.web_config_file)
    with open(args.metrics_file, "rb") as f:
        body = f.read()
    app = make_app(body, BasicAuth(web_config.basic_auth_users), dict(web_config.headers), args.client_max_size)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=args.keepalive_timeout,
                           max_line_size=args.max_line_size, max_field_size=args.max_field_size,
                           max_headers=args.max_headers, handle_signals=False)
    await runner.setup()
    host, port = parse_listen_address(args.listen_address)
    loop = asyncio.get_running_loop()
    # TCPSite has no ssl_handshake_timeout: the server is created here, on runner.server
    server = await loop.create_server(runner.server, host or None, port, ssl=web_config.tls, backlog=args.backlog,
                                      reuse_address=True,
                                      ssl_handshake_timeout=args.handshake_timeout if web_config.tls else None)
    logging.getLogger("alt_aiohttp").info("listening on %s:%d tls=%s", host, port, bool(web_config.tls))
    stopped = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    try:
        await stopped.wait()
    finally:
        server.close()
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics-file", required=True, help="the /metrics body (text format 0.0.4)")
    parser.add_argument("--web.listen-address", dest="listen_address", default=":19847")
    parser.add_argument("--web.config.file", dest="web_config_file")
    parser.add_argument("--keepalive-timeout", type=float, default=120.0)
    parser.add_argument("--handshake-timeout", type=float, default=10.0)
    parser.add_argument("--max-line-size", type=int, default=8192)
    parser.add_argument("--max-field-size", type=int, default=32768)
    parser.add_argument("--max-headers", type=int, default=100)
    parser.add_argument("--client-max-size", type=int, default=64 * 1024)
    parser.add_argument("--backlog", type=int, default=max(128, somaxconn()))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="ts=%(asctime)s level=%(levelname)s logger=%(name)s msg=%(message)r")
    raise_nofile_limit()  # as serve does: soft -> hard
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
