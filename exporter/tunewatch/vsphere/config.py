"""The `--vsphere.config` file, in the style of Prometheus' `--web.config.file`.

    url: https://vcenter.example.com/sdk     # or https://esxi-host/sdk
    username: tunewatch@vsphere.local
    password_file: /etc/tunewatch/vsphere.password
    ca_file: /etc/tunewatch/vcenter-ca.pem       # optional: trust this CA (else the system's)
    insecure_skip_verify: false                  # optional, default false
    timeout: 10s                                 # optional, default 10s

Credentials never come from the command line. Instead of `username`/`password_file` the
environment may give TUNEWATCH_VSPHERE_USERNAME and TUNEWATCH_VSPHERE_PASSWORD (or
TUNEWATCH_VSPHERE_PASSWORD_FILE). A malformed file is a content error naming the file,
the line and the key. The password is kept out of `repr` so it cannot reach a log line.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field

from ..content.yamlsrc import load_yaml
from ..errors import ContentError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..content.yamlsrc import Document

DEFAULT_TIMEOUT = 10.0
KEYS = ("url", "username", "password_file", "ca_file", "insecure_skip_verify", "timeout")
ENV_USER, ENV_PASSWORD, ENV_PASSWORD_FILE = ("TUNEWATCH_VSPHERE_USERNAME", "TUNEWATCH_VSPHERE_PASSWORD",
                                             "TUNEWATCH_VSPHERE_PASSWORD_FILE")


@dataclass(frozen=True)
class VsphereConfig:
    path: str
    url: str
    host: str
    port: int
    username: str
    password: str = field(repr=False)
    ca_file: str | None = None
    insecure_skip_verify: bool = False
    timeout: float = DEFAULT_TIMEOUT

    @property
    def endpoint(self) -> str:
        """What messages and labels may show: the URL, never the user or password."""
        return self.url


def _read_secret(path: str, where: str, doc: Document, pointer: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(64 << 10)
    except OSError as e:
        raise doc.error(f"{where}: cannot read {path}: {e.strerror or e}", pointer) from e
    secret = text.rstrip("\r\n")  # one line, as `--web.config.file` password files are
    if not secret:
        raise doc.error(f"{where}: {path} is empty", pointer)
    return secret


def load_config(path: str, env: dict[str, str] | None = None) -> VsphereConfig:
    env = dict(os.environ) if env is None else env
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error("expected a mapping with url, username, password_file, ...")
    for key in data:
        if key not in KEYS:
            raise doc.error(f"unknown key {key!r} (known: {', '.join(KEYS)})", f"/{key}")
    for key in ("url", "username", "password_file", "ca_file", "timeout"):
        if key in data and not isinstance(data[key], str):
            raise doc.error(f"{key}: expected a string, got {type(data[key]).__name__}", f"/{key}")
    if "insecure_skip_verify" in data and not isinstance(data["insecure_skip_verify"], bool):
        raise doc.error("insecure_skip_verify: expected true or false", "/insecure_skip_verify")
    if "url" not in data:
        raise doc.error("url is required (https://HOST[:PORT]/sdk)")
    url = urllib.parse.urlsplit(data["url"])
    try:
        port = url.port or 443
    except ValueError:
        port = -1
    if url.scheme != "https" or not url.hostname or port < 1 or url.path.rstrip("/") != "/sdk" \
            or url.username or url.query:
        shown = "a URL with credentials" if "@" in url.netloc else repr(data["url"])  # never echo a password
        raise doc.error(f"url: expected https://HOST[:PORT]/sdk without credentials, got {shown}", "/url")
    username = data.get("username") or env.get(ENV_USER)
    if not username:
        raise doc.error(f"username is required (or the environment variable {ENV_USER})")
    if "password_file" in data:
        password = _read_secret(data["password_file"], "password_file", doc, "/password_file")
    elif env.get(ENV_PASSWORD):
        password = env[ENV_PASSWORD]
    elif env.get(ENV_PASSWORD_FILE):
        password = _read_secret(env[ENV_PASSWORD_FILE], ENV_PASSWORD_FILE, doc, "")
    else:
        raise doc.error(f"password_file is required (or the environment variable {ENV_PASSWORD} or "
                        f"{ENV_PASSWORD_FILE})")
    ca_file = data.get("ca_file")
    if ca_file is not None and not os.path.isfile(ca_file):
        raise doc.error(f"ca_file: {ca_file} is not a file", "/ca_file")
    timeout = DEFAULT_TIMEOUT
    if "timeout" in data:
        from ..serve.options import parse_duration
        try:
            timeout = parse_duration(data["timeout"])
        except ValueError as e:
            raise doc.error(f"timeout: {e}", "/timeout") from e
        if timeout <= 0:
            raise doc.error("timeout: must be more than 0s", "/timeout")
    return VsphereConfig(path, data["url"], url.hostname, port, username, password, ca_file,
                         bool(data.get("insecure_skip_verify", False)), timeout)


def require_config(path: str) -> VsphereConfig:
    """load_config for the command line: a missing file is a content error too."""
    if not os.path.exists(path):
        raise ContentError(path, "--vsphere.config: no such file")
    return load_config(path)
