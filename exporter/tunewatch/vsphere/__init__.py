"""vSphere fact source (docs/vsphere.md): the VMX and ESXi facts read over the vSphere API.

pyVmomi is imported only by `client`, and `client` only when `--vsphere.config` is given,
so a plain scan never pays for it. Modules: `config` (the --vsphere.config file), `client`
(connect with timeouts, read one VM and its host), `render` (those facts as the .vmx and
esxcli text the snapshot readers parse), `overlay` (serve them under vmware/ of a root),
`central` (serve: one collector for many VMs), `tags`
(`--vsphere.tag`: VMs by vSphere tag, over the REST API with the standard library).
"""

from __future__ import annotations
