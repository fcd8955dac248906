"""One udev rules token validated as systemd-udevd's `parse_token()` does (systemd
src/udev/udev-rules.c at 0052418bf8a2): which keys take an attribute and which operators,
what an assignment may not set, which misuses udev only rewrites (NAME+= -> NAME=,
ENV:= -> ENV=, ATTR+=/ATTR:= -> ATTR=, TAG:= -> TAG=, OPTIONS+= -> OPTIONS=), what is
ignored alone (an unknown OPTIONS value), and what drops the whole line (an unknown key, an
operator or attribute the key does not take, an `i` prefix on an assignment, an unknown
builtin, an ENV{} udev does not let rules set, NAME="" or NAME="%k"). parsers/udev_rules.py
reads the lines and calls check_token() for each token.
"""

from __future__ import annotations

import re

from .._lazyre import lazy
from .._record import FrozenRecord

MATCH_OPS = ("==", "!=")
# udev-builtin.h: the builtins RUN{builtin} and IMPORT{builtin} accept (udev_builtin_lookup())
BUILTINS = {"blkid", "btrfs", "dissect_image", "factory_reset", "hwdb", "input_id", "keyboard", "kmod",
            "net_driver", "net_id", "net_setup_link", "path_id", "uaccess", "usb_id"}
# sd-device device-private.c device_property_can_set(): properties the kernel or udev owns
_ENV_READONLY = {"ACTION", "DEVLINKS", "DEVNAME", "DEVPATH", "DEVTYPE", "DRIVER", "IFINDEX", "MAJOR", "MINOR",
                 "SEQNUM", "SUBSYSTEM", "TAGS", "CURRENT_TAGS", "USEC_INITIALIZED"}
_OPTIONS = lazy(r"^(dump|string_escape=(none|replace)|db_persist|watch|nowatch|static_node=.*|"
                      r"link_priority=-?\d+|log_level=.+)$")
_IMPORT_ATTRS = {"file", "program", "builtin", "db", "cmdline", "parent"}
_MATCH_ONLY_NO_ATTR = {"ACTION", "DEVPATH", "KERNEL", "SUBSYSTEM", "DRIVER", "KERNELS", "SUBSYSTEMS", "DRIVERS",
                       "TAGS", "RESULT"}


class RuleError(Exception):
    """Why udev drops a line (its log message)."""


class UdevToken(FrozenRecord):
    __slots__ = ("key", "attr", "op", "value", "nocase")
    key: str
    attr: str | None
    op: str
    value: str
    nocase: bool  # `i"..."` prefix

    def __init__(self, key: str, attr: str | None, op: str, value: str, nocase: bool = False):
        self.key = key
        self.attr = attr
        self.op = op
        self.value = value
        self.nocase = nocase


def _invalid(what: str, key: str) -> RuleError:
    return RuleError(f"Invalid {what} for {key}.")


def check_token(tok: UdevToken) -> UdevToken | None:
    """parse_token(): the token as udev keeps it (operator rewritten where udev does), None
    when udev ignores the token alone; RuleError when udev drops the line."""
    key, attr, op, value = tok.key, tok.attr, tok.op, tok.value
    is_match = op in MATCH_OPS
    if not is_match and tok.nocase:
        raise RuleError(f"Invalid prefix 'i' for '{key}'. The 'i' prefix can be specified only for '==' or '!=' "
                        f"operator.")
    if key in _MATCH_ONLY_NO_ATTR or key == "SYMLINK":
        if attr is not None:
            raise _invalid("attribute", key)
        if not is_match and key != "SYMLINK":
            raise _invalid("operator", key)
    elif key == "NAME":
        if attr is not None:
            raise _invalid("attribute", key)
        if op == "-=":
            raise _invalid("operator", key)
        op = "=" if op == "+=" else op
        if not is_match and value in ("%k", ""):
            raise RuleError(f'Ignoring NAME="{value}", as it will take no effect.')
    elif key == "ENV":
        if not attr:
            raise _invalid("attribute", key)
        if op == "-=":
            raise _invalid("operator", key)
        op = "=" if op == ":=" else op
        if not is_match and attr in _ENV_READONLY:
            raise RuleError(f"Invalid ENV attribute. '{attr}' cannot be set.")
    elif key == "CONST":
        if attr not in ("arch", "virt"):
            raise _invalid("attribute", key)
        if not is_match:
            raise _invalid("operator", key)
    elif key == "TAG":
        if attr is not None:
            raise _invalid("attribute", key)
        op = "=" if op == ":=" else op
    elif key in ("ATTR", "SYSCTL"):
        if not attr:
            raise _invalid("attribute", key)
        if op == "-=":
            raise _invalid("operator", key)
        op = "=" if op in ("+=", ":=") else op
    elif key == "ATTRS":
        if not attr:
            raise _invalid("attribute", key)
        if not is_match:
            raise _invalid("operator", key)
    elif key == "TEST":
        if attr and not re.match(r"^[0-7]{1,4}$", attr):
            raise RuleError(f"Failed to parse mode '{attr}'")
        if not is_match:
            raise _invalid("operator", key)
        if tok.nocase:
            raise _invalid("prefix 'i'", key)
    elif key in ("PROGRAM", "IMPORT"):
        if key == "PROGRAM" and attr is not None:
            raise _invalid("attribute", key)
        if key == "IMPORT" and attr not in _IMPORT_ATTRS:
            raise _invalid("attribute", key)
        if op == "-=":
            raise _invalid("operator", key)
        if tok.nocase:
            raise _invalid("prefix 'i'", key)
        if key == "IMPORT" and attr == "builtin" and value.split()[:1] and value.split()[0] not in BUILTINS:
            raise RuleError(f"Unknown builtin command: {value}")
        op = op if is_match else "=="
    elif key == "OPTIONS":
        if attr is not None:
            raise _invalid("attribute", key)
        if is_match or op == "-=":
            raise _invalid("operator", key)
        if not _OPTIONS.match(value):
            return None  # "Invalid value for OPTIONS key, ignoring": the token alone
        op = "=" if op == "+=" else op
    elif key in ("OWNER", "GROUP", "MODE"):
        if attr is not None:
            raise _invalid("attribute", key)
        if is_match or op == "-=":
            raise _invalid("operator", key)
        op = "=" if op == "+=" else op
    elif key == "SECLABEL":
        if not attr:
            raise _invalid("attribute", key)
        if is_match or op == "-=":
            raise _invalid("operator", key)
        op = "=" if op == ":=" else op
    elif key == "RUN":
        if is_match or op == "-=":
            raise _invalid("operator", key)
        if attr not in (None, "program", "builtin"):
            raise _invalid("attribute", key)
        if attr == "builtin" and (value.split()[:1] or [""])[0] not in BUILTINS:
            raise RuleError(f"Unknown builtin command '{value}', ignoring.")
    elif key in ("GOTO", "LABEL"):
        if attr is not None:
            raise _invalid("attribute", key)
        if op != "=":
            raise _invalid("operator", key)
    else:
        raise RuleError(f"Invalid key '{key}'.")
    return tok if op == tok.op else UdevToken(key, attr, op, value, tok.nocase)
