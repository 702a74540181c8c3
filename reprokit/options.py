"""What a person asked for, checked: the options of a run, from the command line's text.

Every option is checked here, before anything starts or any folder is made, and a bad one is a
KitError that names the option, what was given, and what would do (never a Python traceback).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reprokit.errors import KitError
from reprokit.names import MODES
from reprokit.run.backends import BACKENDS
from reprokit.run.cluster import LAYOUTS, parse_cpu_overrides
from reprokit.run.links import parse_link
from reprokit.run.local import ISOLATION_MODES
from reprokit.run.roles import PROGRAMS
from reprokit.run.tuning import PROFILES, Tuning, profile


@dataclass(frozen=True)
class Options:
    """One run, as asked: how long, how many workers, where, with which program and settings."""

    steps: int
    workers: int
    layout: str
    data_source: str
    synthetic_records: int
    cpus: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    modes: tuple[str, ...] = MODES
    tuning: Tuning = PROFILES["default"]
    program: str = "article"


def whole_number(value: Any, option: str, minimum: int = 1) -> int:
    """``value`` (text from the command line, or a number from invoke.yaml) as an int >= minimum."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise KitError(f"--{option} {value!r} is not a whole number",
                       f"give a number of at least {minimum}, e.g. --{option} {max(minimum, 3)}") from None
    if number < minimum:
        raise KitError(f"--{option} {number} is less than {minimum}",
                       f"give a number of at least {minimum}, e.g. --{option} {max(minimum, 3)}")
    return number


def one_of(value: str, option: str, choices: Iterable[str]) -> str:
    known = list(choices)
    if value not in known:
        raise KitError(f"unknown --{option} {value!r}", f"choose one of {', '.join(known)}")
    return value


def worker_counts(text: str, single: bool = False) -> list[int]:
    """'1,2,4' -> [1, 2, 4]; each a whole number of at least 1 (one only, if ``single``)."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    if not items:
        raise KitError(f"--workers {text!r} names no worker count", "give counts like --workers 1,2,4")
    if single and len(items) > 1:
        raise KitError(f"--workers {text!r}: a network sweep runs one worker count", "give one, e.g. --workers 2")
    return [whole_number(item, "workers") for item in items]


def program_list(text: str) -> list[str]:
    """'article,lesson' -> both, each a program of patches/series; 'all' for every one."""
    if text.strip() == "all":
        return list(PROGRAMS)
    return [one_of(item.strip(), "program", PROGRAMS) for item in text.split(",") if item.strip()] or \
        [one_of(text, "program", PROGRAMS)]


def run_options(settings: Any, *, steps: Any, workers: Any, layout: str, cpus: str, source: str,
                run_id: str | None = None, tuning: str = "default", program: str = "article",
                modes: tuple[str, ...] = MODES) -> Options:
    """The options of a reproduction, every one checked."""
    for mode in modes:
        one_of(mode, "mode", MODES)
    return Options(whole_number(steps, "steps"), whole_number(workers, "workers"),
                   one_of(layout, "layout", LAYOUTS), source, settings.synthetic_records,
                   parse_cpu_overrides(cpus or ""), run_id or None, modes, profile(tuning),
                   one_of(program, "program", PROGRAMS))


def check_backend(backend: str, isolation: str, tuning: Tuning, link: str = "none",
                  cluster_file: str | None = None) -> None:
    """A backend and its options that go together; refused before anything starts."""
    one_of(backend, "backend", BACKENDS)
    one_of(isolation, "isolation", ISOLATION_MODES)
    if parse_link(link).bits_per_s is not None and backend != "hosts":
        raise KitError(f"--link {link} shapes the links of simulated hosts, and the {backend} backend has none",
                       "use --backend hosts with it")
    if cluster_file and backend != "swarm":
        raise KitError(f"--cluster places the roles of a Swarm stack, and the {backend} backend places its own",
                       "use --backend swarm with it (for servers on machines of your own: invoke ps, worker, client)")
    if backend != "local" and tuning.client_hosts_ps:
        raise KitError(f"--tuning {tuning.name} runs the ps inside the client's process, and the {backend} "
                       "backend gives every role a container of its own", "use --backend local with it")
