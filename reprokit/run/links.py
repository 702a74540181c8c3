"""Links with a bandwidth: what `--link 10gbit|1gbit|100mbit|none` means, as `tc` commands.

Each simulated host's link is shaped in both directions with a token bucket (`tbf`): on its own
end (what it sends) and on the bridge's end (what it receives). This kernel's `tc` has `tbf`
and `htb` but not `netem`, so a link gets a bandwidth and no added delay: the round trip stays
that of a veth pair, tens of microseconds, as on one switch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reprokit.errors import KitError

LINKS = ("none", "10gbit", "1gbit", "100mbit")
_RATE = re.compile(r"^(?P<number>\d+(?:\.\d+)?)(?P<unit>[kmg]?)bit$")
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
# The bucket must hold a whole segment of the veth's offloaded sends (64 KiB) and the traffic of
# a timer tick at full rate (the kernel releases tokens per tick), or tbf throttles below its rate.
MIN_BURST = 128 * 1024
TICK_S = 0.01
QUEUE_LATENCY = "100ms"


@dataclass(frozen=True)
class Link:
    """A link's name as the person wrote it and its rate in bits per second (None: unshaped)."""

    name: str
    bits_per_s: float | None

    @property
    def bytes_per_s(self) -> float | None:
        return None if self.bits_per_s is None else self.bits_per_s / 8

    @property
    def burst(self) -> int:
        return max(MIN_BURST, int((self.bytes_per_s or 0) * TICK_S))

    def tc_argv(self, device: str) -> list[str]:
        """The command that shapes what leaves ``device``; [] for an unshaped link."""
        if self.bits_per_s is None:
            return []
        return ["tc", "qdisc", "replace", "dev", device, "root", "tbf", "rate", f"{int(self.bits_per_s)}bit",
                "burst", str(self.burst), "latency", QUEUE_LATENCY]


def parse_link(text: str) -> Link:
    """'1gbit' -> Link('1gbit', 1e9); 'none' -> unshaped. Any NUMBER[k|m|g]bit is accepted."""
    text = text.strip().lower()
    if text == "none":
        return Link("none", None)
    match = _RATE.match(text)
    if not match or float(match["number"]) <= 0:
        raise KitError(f"--link {text!r} is not a bandwidth", f"give one of {', '.join(LINKS)} (or e.g. 250mbit)")
    return Link(text, float(match["number"]) * _UNITS[match["unit"]])


def parse_links(text: str) -> list[Link]:
    """'none,1gbit' -> both, in order; at least one."""
    links = [parse_link(item) for item in text.split(",") if item.strip()]
    if not links:
        raise KitError(f"--link {text!r} names no link", f"give links like --link {','.join(LINKS)}")
    return links
