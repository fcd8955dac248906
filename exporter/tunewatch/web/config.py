"""The Prometheus exporter-toolkit `--web.config.file` (TLS, basic auth) and basic auth checks.

Only the standard library (ssl) plus PyYAML and, when basic_auth_users is set, bcrypt
(imported then and only then). The HTTP server itself is httpserver.py. Differences from the
Go toolkit, all because of Python's ssl module or http.server: the file is read once at
start-up (restart to pick up new certificates), HTTP/2 is never offered (`http2` is
accepted and ignored), `RequestClientCert`/`RequireAnyClientCert` (ask for a client
certificate without verifying it) cannot be expressed and are rejected, and
`curve_preferences`/`rate_limit` are rejected rather than silently ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import re
import ssl
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import TunewatchError
from .server import Request, Response  # noqa: F401 - re-exported: routes import them from here

log = logging.getLogger("tunewatch.web")

REALM = "tunewatch"

TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
CLIENT_AUTH = {"NoClientCert": ssl.CERT_NONE, "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
               "RequireAndVerifyClientCert": ssl.CERT_REQUIRED}
# Go cipher suite names (the ones tls.CipherSuites() lists) -> OpenSSL names. The TLS 1.3
# suites are accepted like Go does, and like Go they cannot be restricted (left as is).
CIPHER_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_AES_128_GCM_SHA256": None, "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
}
# Same allow-list as exporter-toolkit: header -> accepted values (None = any value).
ALLOWED_HEADERS = {"Strict-Transport-Security": None, "X-Content-Type-Options": ("nosniff",),
                   "X-Frame-Options": ("deny", "sameorigin"), "X-XSS-Protection": None,
                   "Content-Security-Policy": None}
TOP_LEVEL_KEYS = {"tls_server_config", "http_server_config", "basic_auth_users", "rate_limit"}
TLS_KEYS = {"cert", "key", "client_ca", "cert_file", "key_file", "client_auth_type",
            "client_ca_file", "client_allowed_sans", "min_version", "max_version",
            "cipher_suites", "prefer_server_cipher_suites", "curve_preferences"}
UNSUPPORTED = {"rate_limit", "tls_server_config.curve_preferences"}
BCRYPT_HASH = re.compile(r"^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$")


class WebConfigError(TunewatchError, ValueError):
    """The web config file is malformed; names the file and the offending key."""

    def __init__(self, path: str, key: str, message: str):
        self.path, self.key, self.reason = path, key, message
        super().__init__(f"{path}: {key}: {message}" if key else f"{path}: {message}")


@dataclass(frozen=True)
class WebConfig:
    source: str | None = None
    tls: ssl.SSLContext | None = None
    client_allowed_sans: tuple[str, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    basic_auth_users: Mapping[str, bytes] = field(default_factory=dict)


def load_web_config(path: str | os.PathLike | None) -> WebConfig:
    """Parse and validate an exporter-toolkit web config; None means plain HTTP, no auth."""
    if path is None or str(path) == "":
        return WebConfig()
    import yaml
    path = str(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise WebConfigError(path, "", f"cannot read web config: {e}") from e
    doc = _mapping(path, "", {} if doc is None else doc)
    _check_keys(path, "", doc, TOP_LEVEL_KEYS)
    base_dir = os.path.dirname(os.path.abspath(path))
    http = _mapping(path, "http_server_config", doc.get("http_server_config") or {})
    _check_keys(path, "http_server_config", http, {"http2", "headers"})
    _typed(path, "http_server_config.http2", http.get("http2", True), bool)
    headers = _mapping(path, "http_server_config.headers", http.get("headers") or {})
    for name, value in headers.items():
        key = f"http_server_config.headers.{name}"
        if name not in ALLOWED_HEADERS:
            raise WebConfigError(path, key, "this HTTP header can not be configured")
        allowed = ALLOWED_HEADERS[name]
        if not isinstance(value, str) or (allowed and value not in allowed):
            raise WebConfigError(path, key, f"expected one of {allowed or 'a string'}, got {value!r}")
    users = _mapping(path, "basic_auth_users", doc.get("basic_auth_users") or {})
    for user, hashed in users.items():
        if not isinstance(user, str) or not isinstance(hashed, str) or not BCRYPT_HASH.match(hashed):
            raise WebConfigError(path, f"basic_auth_users.{user}",
                                 "password must be a bcrypt hash ($2a$/$2b$/$2y$, cost 4-31)")
    tls_doc = _mapping(path, "tls_server_config", doc.get("tls_server_config") or {})
    context, sans = _tls_context(path, base_dir, tls_doc) if tls_doc else (None, ())
    return WebConfig(source=path, tls=context, client_allowed_sans=sans,
                     headers={k: v for k, v in headers.items() if v},
                     basic_auth_users={u: h.encode() for u, h in users.items()})


def _mapping(path: str, key: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise WebConfigError(path, key or "(top level)", f"expected a mapping, got {type(value).__name__}")
    return value


def _typed(path: str, key: str, value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise WebConfigError(path, key, f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _check_keys(path: str, prefix: str, doc: dict, known: set[str]) -> None:
    for key in doc:
        full = f"{prefix}.{key}" if prefix else str(key)
        if key not in known:
            raise WebConfigError(path, full, "unknown key")
        if full in UNSUPPORTED:
            raise WebConfigError(path, full, "not supported by tunewatch")


def _tls_context(path: str, base_dir: str, doc: dict) -> tuple[ssl.SSLContext, tuple[str, ...]]:
    _check_keys(path, "tls_server_config", doc, TLS_KEYS)
    opt = {k: _typed(path, f"tls_server_config.{k}", v, str) for k, v in doc.items()
           if k not in ("client_allowed_sans", "cipher_suites", "prefer_server_cipher_suites")}
    key = lambda name: f"tls_server_config.{name}"  # noqa: E731
    # Relative file names are relative to the config file, as config_util.JoinDir does.
    file_of = lambda name: os.path.join(base_dir, opt[name]) if opt.get(name) else None  # noqa: E731
    if not opt.get("cert_file") and not opt.get("cert"):
        raise WebConfigError(path, key("cert_file"), "missing one of cert or cert_file")
    if not opt.get("key_file") and not opt.get("key"):
        raise WebConfigError(path, key("key_file"), "missing one of key or key_file")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for name, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        if opt.get(name, default) not in TLS_VERSIONS:
            raise WebConfigError(path, key(name), f"unknown TLS version {opt[name]!r}")
    ctx.minimum_version = TLS_VERSIONS[opt.get("min_version", "TLS12")]
    ctx.maximum_version = TLS_VERSIONS[opt.get("max_version", "TLS13")]
    _load_cert_chain(path, ctx, file_of("cert_file"), file_of("key_file"), opt)
    mode_name = opt.get("client_auth_type") or "NoClientCert"
    if mode_name not in CLIENT_AUTH:
        raise WebConfigError(path, key("client_auth_type"), f"unsupported value {mode_name!r}; "
                             f"use one of {', '.join(CLIENT_AUTH)}")
    ctx.verify_mode = CLIENT_AUTH[mode_name]
    ca_file, ca_text = file_of("client_ca_file"), opt.get("client_ca")
    if (ca_file or ca_text) and ctx.verify_mode == ssl.CERT_NONE:
        raise WebConfigError(path, key("client_auth_type"),
                             "client CA's have been configured without a Client Auth Policy")
    if ctx.verify_mode != ssl.CERT_NONE and not (ca_file or ca_text):
        raise WebConfigError(path, key("client_ca_file"), f"{mode_name} needs client_ca_file or client_ca")
    if ca_file or ca_text:
        try:
            ctx.load_verify_locations(cafile=ca_file, cadata=None if ca_file else ca_text)
        except (OSError, ssl.SSLError) as e:
            raise WebConfigError(path, key("client_ca_file" if ca_file else "client_ca"), str(e)) from e
    suites = _typed(path, key("cipher_suites"), doc.get("cipher_suites") or [], list)
    for suite in suites:
        if suite not in CIPHER_SUITES:
            raise WebConfigError(path, key("cipher_suites"), f"unknown cipher: {suite}")
    openssl_names = [name for name in map(CIPHER_SUITES.__getitem__, suites) if name]
    if openssl_names:
        ctx.set_ciphers(":".join(openssl_names))
    if _typed(path, key("prefer_server_cipher_suites"), doc.get("prefer_server_cipher_suites", True), bool):
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    sans = _typed(path, key("client_allowed_sans"), doc.get("client_allowed_sans") or [], list)
    if sans and ctx.verify_mode != ssl.CERT_REQUIRED:
        raise WebConfigError(path, key("client_allowed_sans"),
                             "requires client_auth_type RequireAndVerifyClientCert")
    return ctx, tuple(str(s) for s in sans)


def _load_cert_chain(path: str, ctx: ssl.SSLContext, cert_file: str | None, key_file: str | None,
                     opt: dict) -> None:
    # ssl only loads certificates from files: inline PEM goes through a private temp dir.
    with tempfile.TemporaryDirectory(prefix="tunewatch-tls-") as tmp:
        for name, text in (("cert", opt.get("cert")), ("key", opt.get("key"))):
            if text and not (cert_file if name == "cert" else key_file):
                fd = os.open(os.path.join(tmp, name), os.O_WRONLY | os.O_CREAT, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(text)
        cert_file = cert_file or os.path.join(tmp, "cert")
        key_file = key_file or os.path.join(tmp, "key")
        for name, file in (("cert_file", cert_file), ("key_file", key_file)):
            if not os.access(file, os.R_OK):
                raise WebConfigError(path, f"tls_server_config.{name}", f"cannot read {file}")
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as e:
            raise WebConfigError(path, "tls_server_config.cert_file",
                                 f"failed to load certificate/key pair ({cert_file}, {key_file}): {e}") from e


def parse_listen_address(address: str) -> tuple[str, int]:
    """'127.0.0.1:19847' / ':19847' / '[::1]:19847' -> (host, port); host '' means all interfaces."""
    match = re.fullmatch(r"\[([0-9A-Fa-f:.%a-zA-Z]+)\]:(\d+)|([^:\[\]]*):(\d+)", address.strip())
    if not match:
        raise ValueError(f"invalid listen address {address!r}: expected host:port, :port or [ipv6]:port")
    host = match.group(1) if match.group(1) is not None else match.group(3)
    port = int(match.group(2) or match.group(4))
    if port > 65535:
        raise ValueError(f"invalid listen address {address!r}: port out of range")
    return host, port


class BasicAuth:
    """Checks `Authorization: Basic` against bcrypt hashes at a bounded CPU cost.

    A bcrypt check costs ~70 ms at cost 10. Prometheus sends the same credentials every
    scrape, and a flood of bad logins usually repeats itself, so verdicts are cached by
    sha256(user, password) (never the password itself): successes and failures in
    separate LRUs, so a flood of distinct wrong passwords cannot evict the scraper's entry.
    Uncached checks run one at a time (bcrypt_slot) and use at most BCRYPT_DUTY of one
    CPU: after a check that took t seconds the next one may start t * (1/duty - 1) later.
    A request that cannot get its turn within BCRYPT_WAIT seconds gets None (serve: 503).
    """

    OK_CACHE, BAD_CACHE = 64, 4096
    BCRYPT_DUTY = 0.25
    BCRYPT_WAIT = 1.0

    def __init__(self, users: Mapping[str, bytes]):
        self._users = dict(users)
        self._ok: OrderedDict[bytes, None] = OrderedDict()
        self._bad: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()
        self._bcrypt_slot = threading.Lock()
        self._next_start = 0.0
        self._bcrypt: Any = None
        self._dummy = b""
        if self._users:
            import bcrypt  # only with basic_auth_users: no other command or config pays for it
            self._bcrypt = bcrypt
            # Unknown users are checked against a dummy hash of the same cost, so response
            # time does not tell which user names exist.
            cost = int(next(iter(self._users.values()))[4:6])
            self._dummy = bcrypt.hashpw(b"not-a-password", bcrypt.gensalt(rounds=cost))

    @property
    def enabled(self) -> bool:
        return bool(self._users)

    def check(self, authorization: str | None) -> bool | None:
        """True: authorised; False: not (401); None: too many checks right now (503)."""
        if not self._users:
            return True
        user, password = _decode_basic(authorization)
        if user is None:
            return False
        key = hashlib.sha256(b"\0".join((user.encode(), password.encode()))).digest()
        cached = self._cached(key)
        if cached is not None:
            return cached
        deadline = time.monotonic() + self.BCRYPT_WAIT
        if not self._bcrypt_slot.acquire(timeout=self.BCRYPT_WAIT):
            return None
        try:
            cached = self._cached(key)  # the check we waited behind may have been this one
            if cached is not None:
                return cached
            delay = self._next_start - time.monotonic()
            if delay > deadline - time.monotonic():
                return None
            if delay > 0:
                time.sleep(delay)
            started = time.monotonic()
            ok = self._verify(user, password)
            took = time.monotonic() - started
            self._next_start = time.monotonic() + took * (1 / self.BCRYPT_DUTY - 1)
        finally:
            self._bcrypt_slot.release()
        with self._lock:
            cache, size = (self._ok, self.OK_CACHE) if ok else (self._bad, self.BAD_CACHE)
            cache[key] = None
            while len(cache) > size:
                cache.popitem(last=False)
        return ok

    def _cached(self, key: bytes) -> bool | None:
        with self._lock:
            for cache, verdict in ((self._ok, True), (self._bad, False)):
                if key in cache:
                    cache.move_to_end(key)
                    return verdict
        return None

    def _verify(self, user: str, password: str) -> bool:
        hashed = None
        for name, candidate in self._users.items():  # visit every user: constant time
            if hmac.compare_digest(name.encode(), user.encode()):
                hashed = candidate
        try:
            return bool(self._bcrypt.checkpw(password.encode(), hashed or self._dummy)) and hashed is not None
        except ValueError:  # e.g. password longer than 72 bytes
            return False


def _decode_basic(authorization: str | None) -> tuple[str | None, str]:
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic":
        return None, ""
    try:
        user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None, ""
    return (user, password) if sep else (None, "")


def san_allowed(web_config: WebConfig, conn: ssl.SSLSocket) -> bool:
    """client_allowed_sans: the client certificate must carry one of them."""
    if not web_config.client_allowed_sans:
        return True
    cert: dict[str, Any] = conn.getpeercert() or {}  # typeshed: a union over every field
    sans = {value for _, value in cert.get("subjectAltName", ())}
    return bool(sans & set(web_config.client_allowed_sans))
