"""A private network namespace for the local cluster.

TensorFlow's gRPC servers are unauthenticated and listen on every interface.
Inside a fresh network namespace the only interface is a loopback of its own,
so nothing outside the run can reach them (and their ports cannot clash with
anything on the host).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import struct

from reprokit import commands

# How to make namespaces available: said by every backend that needs them and cannot have them.
NAMESPACE_FIXES = ("run as root, or allow unprivileged user namespaces (on Ubuntu 23.10 and later: "
                   "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`)")
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def unshare_prefix() -> list[str]:
    """The command prefix that runs a program in a new network namespace."""
    prefix = ["unshare", "--net"]
    if os.geteuid() != 0:
        prefix.append("--map-root-user")  # an unprivileged user needs a user namespace too
    return prefix + ["--"]


def isolation_available() -> tuple[bool, str]:
    """Whether this machine lets us make one; the reason when it does not."""
    if shutil.which("unshare") is None:
        return False, "the `unshare` program (util-linux) is not installed"
    code, output = commands.attempt(unshare_prefix() + ["true"])
    if code != 0:
        return False, f"`unshare --net` failed: {output.strip() or code}"
    return True, ""


def bring_loopback_up() -> None:
    """A new namespace's loopback starts down; bring it up (no `ip` binary needed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def interfaces() -> list[str]:
    """Network interfaces visible to this process (evidence for the report)."""
    return sorted(name for _, name in socket.if_nameindex())
