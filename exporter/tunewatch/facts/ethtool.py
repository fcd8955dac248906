"""NIC driver state: ethtool/<if>.json in a snapshot, the kernel itself on a live host."""

from __future__ import annotations

import json

from ..errors import FactError
from ..host.fs import FS


def read_ethtool(fs: FS, ifname: str) -> dict:
    """The snapshot-shaped dict; sections the driver does not support are absent."""
    rel = f"ethtool/{ifname}.json"
    if fs.live and not fs.exists(rel):
        from .ethtool_live import EthtoolUnavailable, read_interface

        try:
            return read_interface(ifname)
        except EthtoolUnavailable as e:
            raise FactError(f"ethtool {ifname}: {e}") from e
    text = fs.read_text(rel)
    if text is None:
        raise FactError(f"{rel} is missing from the snapshot")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise FactError(f"{rel}: not JSON ({e})") from e
    if not isinstance(data, dict):
        raise FactError(f"{rel}: expected a JSON object")
    return data
