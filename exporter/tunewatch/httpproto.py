"""HTTP/1.x request framing and one-request handling for httpserver.py.

`frame()` decides where a request ends from the raw bytes alone (Content-Length, no
chunked bodies), before anything else parses them, so the server and the parser can never
disagree about framing. `OneRequest` is http.server.BaseHTTPRequestHandler run over one
buffered request: the request line and header grammar are the standard library's.
"""

from __future__ import annotations

import io
import logging
import re
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger("tunewatch.web")

MAX_HEADER_BYTES = 32 * 1024
MAX_BODY_BYTES = 64 * 1024
_HEADER_END = re.compile(rb"\r?\n\r?\n")


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Any  # case-insensitive (email.message.Message)
    body: bytes = b""
    remote: str = ""


@dataclass
class Response:
    status: int
    content_type: str = "text/plain; charset=utf-8"
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


REFUSALS = {400: "Bad Request: duplicate, conflicting or invalid Content-Length, or a malformed header",
            411: "Length Required: Transfer-Encoding is not supported",
            413: "Request body too large", 431: "Request header fields too large"}


def frame(buf: bytearray) -> tuple[int, int] | None:
    """(200, request length) for a complete request at the start of `buf`; (status, 0) for
    one to refuse; None while incomplete."""
    match = _HEADER_END.search(buf, 0, MAX_HEADER_BYTES + 4)
    if match is None:
        return (431, 0) if len(buf) > MAX_HEADER_BYTES else None
    lengths, chunked = [], False
    for line in bytes(buf[:match.start()]).split(b"\n")[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        if name != name.rstrip():
            return 400, 0  # RFC 9112 §5.1: whitespace before the colon must be rejected
        name = name.strip().lower()
        if name == b"content-length":
            lengths.append(value.strip())
        elif name == b"transfer-encoding":
            chunked = True
    if chunked:
        return 411, 0
    if len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
        return 400, 0  # RFC 9112 §6.3: a request with an invalid length is unrecoverable
    length = int(lengths[0]) if lengths else 0
    if length > MAX_BODY_BYTES:
        return 413, 0
    total = match.end() + length
    return (200, total) if len(buf) >= total else None


def plain_response(status: int, reason: str) -> bytes:
    body = f"{reason}\n".encode()
    return (f"HTTP/1.1 {status} {reason.split(':')[0]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


class OneRequest(BaseHTTPRequestHandler):
    """BaseHTTPRequestHandler over one buffered request; the response collects in wfile."""

    protocol_version = "HTTP/1.1"
    server_version = "tunewatch"
    sys_version = ""

    def __init__(self, raw: bytes, remote: str, app: Callable[[Request], Response]):  # noqa: D107
        # Not BaseRequestHandler.__init__: there is no socket here, only bytes.
        self.rfile = io.BytesIO(raw)
        self.wfile = io.BytesIO()
        self.client_address = (remote, 0)
        self.app = app
        self.close_connection = True
        self.requestline, self.request_version, self.command = "", self.default_request_version, None

    def _dispatch(self) -> None:
        started = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        url = urlsplit(self.path)
        request = Request(self.command, url.path, parse_qs(url.query), self.headers,
                          self.rfile.read(length) if length else b"", self.client_address[0])
        try:
            response = self.app(request)
        except Exception:  # noqa: BLE001 - a bug in a route is a 500, not a dead worker
            log.exception("handler failed", extra={"path": url.path})
            response = Response(500, body=b"Internal Server Error\n")
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        if self.request_version == "HTTP/1.0" and not self.close_connection:
            self.send_header("Connection", "keep-alive")  # else the 1.0 client waits for a close
        elif self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)
        log.debug("request", extra={"method": self.command, "path": url.path, "status": response.status,
                                    "remote": self.client_address[0], "user_agent": self.headers.get("User-Agent", ""),
                                    "content_type": response.content_type,
                                    "content_encoding": response.headers.get("Content-Encoding", ""),
                                    "duration_seconds": round(time.monotonic() - started, 6)})

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _dispatch

    def version_string(self) -> str:
        return self.server_version

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        pass  # _dispatch logs with timing instead

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format % args, extra={"remote": self.client_address[0]})


