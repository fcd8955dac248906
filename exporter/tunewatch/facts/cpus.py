"""Online CPUs and NUMA topology."""

from __future__ import annotations

from .._record import FrozenRecord
from ..host.fs import FS
from ..parsers.cpulist import parse_cpulist


class Topology(FrozenRecord):
    __slots__ = ("online", "nodes")
    online: frozenset[int]
    nodes: dict[int, frozenset[int]]  # NUMA node -> online CPUs

    def __init__(self, online: frozenset[int], nodes: dict[int, frozenset[int]]):
        self.online = online
        self.nodes = nodes

    def node_cpus(self, node: int) -> frozenset[int]:
        return self.nodes.get(node, frozenset())

    def node_of(self, cpu: int) -> int | None:
        for node, cpus in self.nodes.items():
            if cpu in cpus:
                return node
        return None


def read_topology(fs: FS) -> Topology:
    online_text = fs.read_required("sys/devices/system/cpu/online")
    online = parse_cpulist(online_text, "sys/devices/system/cpu/online")
    nodes: dict[int, frozenset[int]] = {}
    for name in fs.listdir("sys/devices/system/node"):
        if name.startswith("node") and name[4:].isdigit():
            rel = f"sys/devices/system/node/{name}/cpulist"
            text = fs.read_text(rel)
            if text is not None:
                nodes[int(name[4:])] = parse_cpulist(text, rel) & online
    if not nodes:  # kernels without NUMA expose no node directory: one node holds all
        nodes = {0: online}
    return Topology(online=online, nodes=dict(sorted(nodes.items())))
