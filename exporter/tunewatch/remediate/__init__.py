"""Remediation: bash or Ansible that fixes the failed checks of one scan.

`tunewatch remediate` only writes text; it never changes the host it scans. Templates per
check kind live in `templates.py` (like ComplianceAsCode's per-template remediations),
renderers for each output format in `bash.py` and `ansible.py`.
"""

from __future__ import annotations
