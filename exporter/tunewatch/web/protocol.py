"""HTTP/1.x request parsing and response writing for httpserver.py, per RFC 9110/9112.

`frame()` parses the request head from the raw bytes alone and decides where the request
ends (Content-Length only; no request needs a chunked body) before anything else looks at
it, so the server and the application can never disagree about framing. Every refusal is
a status from this table, sent with a proper status line and `Connection: close`:

* 400: malformed request line (not `method SP target SP HTTP/x.y`, a bare method, HTTP/0.9),
  obs-fold (a header line starting with SP/HTAB, RFC 9112 §5.2), a line without a colon,
  a name that is not a token (whitespace before the colon, RFC 9112 §5.1), a value with
  NUL, CR, LF or another control byte except HTAB (RFC 9110 §5.5), no Host or several
  in HTTP/1.1 (RFC 9112 §3.2), duplicate or invalid Content-Length (RFC 9112 §6.3);
* 411: Transfer-Encoding; 413: body over MAX_BODY_BYTES; 414: request line over
  MAX_REQUEST_LINE; 431: head over MAX_HEADER_BYTES or more than MAX_FIELDS fields;
* 417: an Expect other than 100-continue; 501: a method this server does not implement
  (RFC 9110 §9.1); 505: an HTTP major version other than 1 (HTTP/2's preface included).

Empty lines before the request line are skipped (RFC 9112 §2.2). A request with
`Expect: 100-continue` and a body not yet received gets `100 Continue` (the server sends
`CONTINUE`).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import Callable
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger("tunewatch.web")

MAX_HEADER_BYTES = 32 * 1024
MAX_BODY_BYTES = 64 * 1024
MAX_REQUEST_LINE = 8 * 1024
MAX_FIELDS = 100
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"))  # the rest: 501

_LEADING_EMPTY = re.compile(rb"(?:\r?\n)*")
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_LINE_END = re.compile(rb"\r?\n")
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e\x80-\xff]+) HTTP/(\d)\.(\d)")
_FIELD_NAME = re.compile(_TOKEN)
_BAD_VALUE_BYTE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # CTLs except HTAB; obs-text is allowed


class Headers(dict):
    """Field name (lower case) -> value; several fields of one name are joined with ', '."""

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return super().__contains__(str(name).lower())


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Headers
    body: bytes = b""
    remote: str = ""
    version: str = "HTTP/1.1"
    target: str = ""


@dataclass
class Response:
    status: int
    content_type: str = "text/plain; charset=utf-8"
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Head:
    """A parsed request head: `start` (leading empty lines skipped), `total` (end of body)."""

    request: Request
    start: int
    body_at: int
    total: int
    keep_alive: bool
    expect_continue: bool


class Refusal(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def frame(buf: bytearray) -> Head | Refusal | None:
    """The request at the start of `buf`: its Head (its body may still be incomplete:
    `len(buf) < head.total`), a Refusal, or None while the head is incomplete."""
    start = _LEADING_EMPTY.match(buf).end()  # type: ignore[union-attr]
    match = _HEADER_END.search(buf, start, start + MAX_HEADER_BYTES + 4)
    if match is None:
        line_end = _LINE_END.search(buf, start)
        if (line_end.start() if line_end else len(buf) - start) > MAX_REQUEST_LINE:
            return Refusal(414, "URI Too Long: request line over 8 KiB")
        if len(buf) - start > MAX_HEADER_BYTES:
            return Refusal(431, "Request Header Fields Too Large")
        if start > MAX_HEADER_BYTES:
            return Refusal(400, "Bad Request: only empty lines")
        return None
    try:
        return _parse(bytes(buf[start:match.start()]), start, match.end())
    except Refusal as refusal:
        return refusal


def _parse(head: bytes, start: int, body_at: int) -> Head:
    lines = _LINE_END.split(head)
    if len(lines[0]) > MAX_REQUEST_LINE:
        raise Refusal(414, "URI Too Long: request line over 8 KiB")
    if len(lines) - 1 > MAX_FIELDS:
        raise Refusal(431, f"Request Header Fields Too Large: more than {MAX_FIELDS} fields")
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None:
        raise Refusal(400, "Bad Request: malformed request line")
    method, target = line.group(1).decode(), line.group(2).decode("latin-1")
    major, minor = int(line.group(3)), int(line.group(4))
    if major != 1:
        raise Refusal(505, "HTTP Version Not Supported: only HTTP/1.0 and HTTP/1.1")
    headers, hosts, lengths = Headers(), 0, []
    for raw in lines[1:]:
        if raw[:1] in (b" ", b"\t"):
            raise Refusal(400, "Bad Request: obsolete line folding")
        name, sep, value = raw.partition(b":")
        if not sep or not _FIELD_NAME.fullmatch(name):
            raise Refusal(400, "Bad Request: malformed header field name")
        value = value.strip(b" \t")
        if _BAD_VALUE_BYTE.search(value):
            raise Refusal(400, "Bad Request: control character in a header field value")
        key, text = name.decode().lower(), value.decode("latin-1")
        hosts += key == "host"
        if key == "content-length":
            lengths.append(text)
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    if "transfer-encoding" in headers:
        raise Refusal(411, "Length Required: Transfer-Encoding is not supported")
    if len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
        raise Refusal(400, "Bad Request: duplicate, conflicting or invalid Content-Length")
    if hosts > 1 or (hosts == 0 and minor >= 1):
        raise Refusal(400, "Bad Request: HTTP/1.1 needs exactly one Host header")
    length = int(lengths[0]) if lengths else 0
    if length > MAX_BODY_BYTES:
        raise Refusal(413, "Content Too Large: request body over 64 KiB")
    expect = headers.get("expect")
    if expect is not None and expect.lower() != "100-continue":
        raise Refusal(417, "Expectation Failed: only 100-continue is supported")
    if method not in METHODS:
        raise Refusal(501, f"Not Implemented: method {method}")
    if not (target.startswith("/") or (target == "*" and method == "OPTIONS") or "://" in target):
        raise Refusal(400, "Bad Request: malformed request target")
    tokens = {t.strip().lower() for t in (headers.get("connection") or "").split(",")}
    keep_alive = "keep-alive" in tokens if minor == 0 else "close" not in tokens
    url = urlsplit(target)
    request = Request(method, url.path or "/", parse_qs(url.query), headers,
                      version=f"HTTP/1.{min(minor, 1)}", target=target)
    return Head(request, start, body_at, body_at + length, keep_alive, expect is not None and length > 0)


def serialize(response: Response, request: Request | None, keep_alive: bool) -> bytes:
    """The response bytes; HTTP/1.0 keep-alive is confirmed (else the client waits for a close)."""
    headers = {"Content-Type": response.content_type, "Content-Length": str(len(response.body)),
               "Date": formatdate(usegmt=True), **response.headers}
    if not keep_alive:
        headers["Connection"] = "close"
    elif request is not None and request.version == "HTTP/1.0":
        headers["Connection"] = "keep-alive"
    try:
        phrase = HTTPStatus(response.status).phrase
    except ValueError:
        phrase = "Unknown"
    head = f"HTTP/1.1 {response.status} {phrase}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    body = b"" if request is not None and request.method == "HEAD" else response.body
    return head.encode("latin-1") + b"\r\n" + body


def refusal_response(status: int, reason: str, headers: dict[str, str] | None = None) -> bytes:
    return serialize(Response(status, body=f"{reason}\n".encode(), headers=headers or {}), None, False)


def handle(head: Head, body: bytes, remote: str, app: Callable[[Request], Response]) -> tuple[bytes, bool]:
    """Run the application on one framed request: (response bytes, keep the connection)."""
    started = time.monotonic()
    request = head.request
    request.body, request.remote = body, remote
    try:
        response = app(request)
    except Exception:  # noqa: BLE001 - a bug in a route is a 500, not a dead worker
        log.exception("handler failed", extra={"path": request.path})
        response = Response(500, body=b"Internal Server Error\n")
    log.debug("request", extra={"method": request.method, "path": request.path, "status": response.status,
                                "remote": remote, "user_agent": request.headers.get("User-Agent", ""),
                                "content_type": response.content_type,
                                "content_encoding": response.headers.get("Content-Encoding", ""),
                                "duration_seconds": round(time.monotonic() - started, 6)})
    return serialize(response, request, head.keep_alive), head.keep_alive
