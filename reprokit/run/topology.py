"""Simulated hosts on one LAN: a network namespace per role, each with its own address on a
private bridge, its link shaped to a bandwidth, its bytes counted.

It is built by the hosts backend's supervisor from inside the run's own network namespace (and,
for a normal user, its own user namespace): the bridge, the links and every role's namespace
live in there, so nothing outside the run sees them, and all of it vanishes with the run's
processes, even after a `kill -9`. A role's namespace is held by a `sleep` that dies with the
supervisor; the role itself enters it with `nsenter`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field

from reprokit import commands
from reprokit.errors import ClusterError
from reprokit.run.links import Link
from reprokit.run.process_handle import DIE_WITH_PARENT

SUBNET = "10.231.0"  # addresses inside the run's own namespace only: no other network sees them
PREFIX = 24
BRIDGE = "rk-lan"
BRIDGE_ADDRESS = f"{SUBNET}.1"
FIRST_HOST = 10
READY_S = 10.0


def host_addresses(roles: list[str]) -> dict[str, str]:
    """ps, worker0, ... -> 10.231.0.10, .11, ...: one address per simulated host, in role order."""
    return {role: f"{SUBNET}.{FIRST_HOST + i}" for i, role in enumerate(roles)}


def _ns(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


@dataclass
class Host:
    role: str
    address: str
    holder: subprocess.Popen[str]
    device: str  # its link's end on the bridge: what it receives leaves here, what it sends arrives

    @property
    def enter(self) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net", "--"]


@dataclass
class Traffic:
    """Bytes through each host's link at one moment: (sent by the host, received by the host)."""

    at: float
    bytes: dict[str, tuple[int, int]] = field(default_factory=dict)


class Topology:
    """The bridge, one namespace and one link per role; `close` removes what `build` made."""

    def __init__(self, addresses: dict[str, str], link: Link, echo: commands.Echo = commands.silent) -> None:
        self.addresses, self.link, self.echo = addresses, link, echo
        self.hosts: dict[str, Host] = {}

    def _ip(self, *argv: str, enter: list[str] | None = None) -> str:
        return commands.run([*(enter or []), *argv], echo=self.echo,
                            hint="the hosts backend needs iproute2 (`ip`, `tc`) and a network namespace of its own")

    def build(self) -> None:
        self._ip("ip", "link", "set", "lo", "up")
        self._ip("ip", "link", "add", BRIDGE, "type", "bridge")
        self._ip("ip", "addr", "add", f"{BRIDGE_ADDRESS}/{PREFIX}", "dev", BRIDGE)
        self._ip("ip", "link", "set", BRIDGE, "up")
        for role, address in self.addresses.items():
            self.hosts[role] = self._add_host(role, address)

    def _add_host(self, role: str, address: str) -> Host:
        holder = commands.spawn([*DIE_WITH_PARENT, "unshare", "--net", "--", "sleep", "infinity"],
                                stdout=subprocess.DEVNULL, echo=self.echo)
        deadline = time.monotonic() + READY_S
        while _ns(holder.pid) == _ns(os.getpid()):  # until unshare has made its namespace
            if holder.poll() is not None or time.monotonic() > deadline:
                raise ClusterError(f"could not make a network namespace for the {role} host "
                                   f"(`unshare --net` exited with {holder.poll()})")
            time.sleep(0.02)
        host = Host(role, address, holder, f"v-{role}"[:15])
        peer = f"p-{role}"[:15]
        self._ip("ip", "link", "add", host.device, "type", "veth", "peer", "name", peer)
        self._ip("ip", "link", "set", peer, "netns", f"/proc/{holder.pid}/ns/net")
        self._ip("ip", "link", "set", host.device, "master", BRIDGE, "up")
        inside = host.enter
        self._ip("ip", "link", "set", "lo", "up", enter=inside)
        self._ip("ip", "link", "set", peer, "name", "eth0", enter=inside)
        self._ip("ip", "addr", "add", f"{address}/{PREFIX}", "dev", "eth0", enter=inside)
        self._ip("ip", "link", "set", "eth0", "up", enter=inside)
        for shape in (self.link.tc_argv("eth0"), self.link.tc_argv(host.device)):
            if shape:
                self._ip(*shape, enter=inside if "eth0" in shape else None)
        return host

    def enter(self, role: str) -> list[str]:
        return self.hosts[role].enter

    def traffic(self) -> Traffic:
        """Each host's bytes so far, read from the bridge's ends of the links (netlink, not /sys,
        which shows the namespace that mounted it)."""
        code, output = commands.attempt(["ip", "-s", "-j", "link", "show"])
        found = Traffic(time.monotonic())
        if code != 0:
            return found
        by_device = {d.get("ifname"): d.get("stats64", {}) for d in json.loads(output or "[]")}
        for role, host in self.hosts.items():
            stats = by_device.get(host.device)
            if stats:  # what the bridge's end receives, the host sent, and the other way round
                found.bytes[role] = (int(stats["rx"]["bytes"]), int(stats["tx"]["bytes"]))
        return found

    def close(self) -> list[str]:
        """Stop the namespaces' holders (their links go with them) and remove the bridge."""
        left = []
        for host in self.hosts.values():
            host.holder.kill()
            host.holder.wait()
        code, output = commands.attempt(["ip", "link", "del", BRIDGE])
        if code != 0 and "Cannot find device" not in output:
            left.append(f"bridge {BRIDGE} ({output.strip()})")
        return left


class TrafficMeter:
    """Reads the links' counters at each step line, to give each host's bytes per step.

    Per step means between the second step line and the last one: the first step line comes
    after the variables' first transfer and the queues' fill, which no later step repeats."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.start = topology.traffic()
        self.samples: list[tuple[int, Traffic]] = []

    def on_step(self, step: int) -> None:
        self.samples.append((step, self.topology.traffic()))

    def report(self) -> dict[str, object]:
        end = self.samples[-1][1] if self.samples else self.topology.traffic()
        first = self.samples[1] if len(self.samples) > 2 else None
        steps = (self.samples[-1][0] - first[0]) if first else 0
        hosts: dict[str, dict[str, object]] = {}
        for role, host in self.topology.hosts.items():
            sent, received = end.bytes.get(role, (0, 0))
            base_sent, base_received = self.start.bytes.get(role, (0, 0))
            row: dict[str, object] = {"address": host.address, "sent": sent - base_sent,
                                      "received": received - base_received}
            if first and steps > 0 and role in first[1].bytes:
                row["sent_per_step"] = round((sent - first[1].bytes[role][0]) / steps)
                row["received_per_step"] = round((received - first[1].bytes[role][1]) / steps)
            hosts[role] = row
        return {"link": self.topology.link.name, "hosts": hosts,
                "per_step_from": f"step {first[0]} to step {self.samples[-1][0]}" if first else ""}
