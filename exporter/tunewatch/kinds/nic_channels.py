"""NIC queue (channel) count within min(max_queues, CPUs of the NIC's NUMA node)."""

from __future__ import annotations

from .._escape import sh
from ..results import ERROR, FAIL, PASS, Fix, ObjectResult, Setting
from .base import Target, per_object

# its objects are interfaces (eth1, eth1/irq45): one the kernel could not have named is an error
PER_INTERFACE = True
VARS_SCHEMA = {"type": "object", "required": ["max_queues"], "additionalProperties": False,
               "properties": {"max_queues": {"type": "integer", "minimum": 1},
                              "limit_to_node_cpus": {"type": "boolean"}}}


def evaluate(t: Target) -> list[ObjectResult]:
    def one(iface):
        channels = t.facts.ethtool(iface.name).get("channels")
        if not channels:
            return ObjectResult(iface.name, ERROR, "", "unsupported",
                                f"{iface.name}: the {iface.driver} driver reports no channels")
        kind = "combined" if channels.get("combined-max") or channels.get("combined") else "rx"
        count = channels.get(kind, 0)
        limit, why = t.vars["max_queues"], f"max_queues {t.vars['max_queues']}"
        if t.vars.get("limit_to_node_cpus", True):
            node = iface.node_or_zero()
            node_cpus = len(t.facts.topology.node_cpus(node))
            if 0 < node_cpus < limit:
                limit, why = node_cpus, f"{node_cpus} CPUs on NUMA node {node}"
        settings = [Setting(f"channels.{kind}", count, None), Setting("channels.limit", None, limit)]
        if count <= limit:
            return ObjectResult(iface.name, PASS, f"<= {limit}", str(count),
                                f"{iface.name} has {count} {kind} queues (limit {limit}: {why})", settings)
        command = f"ethtool -L {sh(iface.name)} {kind} {limit}"
        return ObjectResult(iface.name, FAIL, f"<= {limit}", str(count),
                            f"{iface.name} has {count} {kind} queues; at most {limit} ({why}): {command}",
                            settings, fix=Fix(command=command))

    return per_object(t.interfaces(), lambda i: i.name, one)
