"""Fixtures for the exporter tests: TLS material, web configs, in-process exporters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # make tests/support importable as `support`
    sys.path.insert(0, str(TESTS_DIR))

from support.procs import LOOPBACK  # noqa: E402

REPO = TESTS_DIR.parent
USER, PASSWORD = "prometheus", "s3cret pass:word"


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Self-signed cert + key for 127.0.0.1/localhost (openssl CLI), valid one day."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True, timeout=30)
    except FileNotFoundError:
        pytest.skip("openssl CLI not installed")
    return cert, key


@pytest.fixture(scope="session")
def password_hash() -> str:
    import bcrypt
    return bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture
def tls_web_config(tmp_path: Path, tls_files: tuple[Path, Path], password_hash: str) -> Path:
    """exporter-toolkit web config: TLS (cert paths relative to the file) + one basic-auth user."""
    import shutil
    cert, key = tls_files
    shutil.copy(cert, tmp_path / "cert.pem")
    shutil.copy(key, tmp_path / "key.pem")
    path = tmp_path / "web-config.yml"
    path.write_text("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                    f"basic_auth_users:\n  {USER}: '{password_hash}'\n")
    return path


@pytest.fixture
def start_exporter_inproc() -> Iterator[Callable[..., Any]]:
    """start_exporter on a free 127.0.0.1 port; every exporter started is stopped at teardown."""
    from tunewatch.serve.exporter import start_exporter
    handles: list[Any] = []

    def start(scan: Callable[[], Any], render: Callable[[Any], bytes] | None = None, *, interval: float = 60.0,
              timeout: float = 30.0, web_config: Path | None = None, landing_info: dict | None = None) -> Any:
        from tunewatch.outputs.prometheus import make_renderer
        handle = start_exporter(f"{LOOPBACK}:0", str(web_config) if web_config else None, scan,
                                render or make_renderer(), interval, timeout, landing_info)
        handles.append(handle)
        return handle

    try:
        yield start
    finally:
        for handle in handles:
            handle.stop()


@pytest.fixture
def child_exporter() -> Iterator[Callable[..., Any]]:
    """start_exporter in the CLI's mode (each scan in a child process killed on timeout);
    `start(scan, **ServeOptions fields)`; every exporter is stopped at teardown."""
    from tunewatch.serve.exporter import start_exporter
    from tunewatch.serve.options import ServeOptions
    handles: list[Any] = []

    def start(scan: Callable[[], Any], **options: Any) -> Any:
        handle = start_exporter(f"{LOOPBACK}:0", None, scan, options=ServeOptions(**options))
        handles.append(handle)
        return handle

    try:
        yield start
    finally:
        for handle in handles:
            handle.stop()
