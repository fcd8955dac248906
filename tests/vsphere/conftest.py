"""Shared vcsim inventories for the vSphere tests (module docstring of vcsim.py).

fleet (first vcsim, real OptionManagers):
  hana-tuned    on DC0_H0     2 vmxnet3 NICs, seed 001 VMX options; host NetNetqRxQueueFeatPairEnable 0
  hana-default  on DC0_C0_H0  2 vmxnet3 NICs, nothing set;           host NetNetqRxQueueFeatPairEnable 1
  bigip-ve      on DC0_C0_H1  ethernet0..3, seed 002 options on ethernet1..3, affinity 1-7,
                              in folder /DC0/vm/appliances
  bigip-default on DC0_C0_H2  ethernet0..3, nothing set, affinity 0-7
hosts (clone of fleet, hyperthreading and power policy edited):
  DC0_H0 HT active, configured on, static; DC0_C0_H0 HT active, configured OFF (pending
  reboot), dynamic; DC0_C0_H1 HT off, static; DC0_C0_H2 HT active, dynamic.
"""

from __future__ import annotations

import pytest

from .vcsim import clone_with_hosts, create_vm, start_vcsim

SEED_001 = {f"ethernet{n}.{k}": v for n in (0, 1) for k, v in (("pnicFeatures", "4"), ("ctxPerDev", "3"),
                                                               ("udpRSS", "1"))}
SEED_002 = {**{f"ethernet{n}.{k}": v for n in (1, 2, 3) for k, v in (("pnicFeatures", "4"), ("ctxPerDev", "1"))},
            "sched.cpu.affinity": "1-7"}
HOSTS = {"DC0_H0": (True, True, "static"), "DC0_C0_H0": (True, False, "dynamic"),
         "DC0_C0_H1": (False, False, "static"), "DC0_C0_H2": (True, True, "dynamic")}


@pytest.fixture(scope="session")
def fleet(tmp_path_factory):
    sim = start_vcsim(tmp_path_factory.mktemp("vcsim"))
    try:
        create_vm(sim, "hana-tuned", "DC0_H0", 2, SEED_001)
        create_vm(sim, "hana-default", "DC0_C0_H0", 2, {})
        create_vm(sim, "bigip-ve", "DC0_C0_H1", 4, SEED_002)
        create_vm(sim, "bigip-default", "DC0_C0_H2", 4, {"sched.cpu.affinity": "0-7"})
        sim.govc("folder.create", "/DC0/vm/appliances")
        sim.govc("object.mv", "/DC0/vm/bigip-ve", "/DC0/vm/appliances")
        sim.govc("host.option.set", "-host", "DC0_H0", "Net.NetNetqRxQueueFeatPairEnable", "0")
        sim.govc("host.option.set", "-host", "DC0_C0_H0", "Net.NetNetqRxQueueFeatPairEnable", "1")
        yield sim
    finally:
        sim.stop()


@pytest.fixture(scope="session")
def hosts(fleet, tmp_path_factory):
    sim = clone_with_hosts(fleet, tmp_path_factory.mktemp("vcsim-hosts"), HOSTS)
    try:
        yield sim
    finally:
        sim.stop()
