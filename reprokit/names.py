"""Every name the kit gives: the roles of a run, their hostnames and logs, the files of a run folder.

One place, so that "worker1", "tf_worker_2" and "worker1.log" are built the same way by the
role builders, the backends, the judge and the report.
"""

from __future__ import annotations

from pathlib import Path

PS, CLIENT, STANDALONE = "ps", "client", "standalone"
MODES = ("standalone", "cluster")
# The article's container hostnames.
_HOSTNAMES = {PS: "tf_paramserver", CLIENT: "tf_client", STANDALONE: "tf_standalone"}
_WORKER = "worker"

# The files of a run folder (runs/<id>/).
RUN_FILE = "run.json"  # what was asked: written first, read by the judge and the report
RESULTS = "results.json"  # what came out: written by the report stage
REPORT = "report.md"
PLOT = "speed.png"
STAGES = "stages"

# The role server: a plain script (it also runs inside the image, where the kit is not installed).
ROLE_SERVER = Path(__file__).resolve().parent / "run" / "role_server.py"
IMAGE_ROLE_SERVER = "/opt/reprokit/role_server.py"


def worker(index: int) -> str:
    """worker0, worker1, ...: task i of the worker job."""
    return f"{_WORKER}{index}"


def worker_index(role: str) -> int | None:
    """1 for 'worker1'; None for any other role."""
    digits = role[len(_WORKER):]
    return int(digits) if role.startswith(_WORKER) and digits.isdigit() else None


def server_name(job: str, task: int) -> str:
    """The role that serves /job:<job>/task:<task>."""
    return PS if job == "ps" else worker(task)


def cluster_role_names(workers: int) -> list[str]:
    """ps, worker0..worker<N-1>, client: the order they start in."""
    return [PS, *(worker(i) for i in range(workers)), CLIENT]


def hostname(role: str) -> str:
    """tf_paramserver, tf_worker_1 (for worker0), ..., as the article names its containers;
    tf_standalone1 for standalone1, a second standalone beside the first (the bench's ceiling)."""
    index = worker_index(role)
    if index is not None:
        return f"tf_worker_{index + 1}"
    copy = role.removeprefix(STANDALONE)
    return f"{_HOSTNAMES[STANDALONE]}{copy}" if copy.isdigit() else _HOSTNAMES[role]


def log_path(run_dir: str | Path, role: str, incarnation: int = 1) -> Path:
    """worker1.log; a restarted role's next incarnations log beside it: worker1.2.log, ..."""
    return Path(run_dir) / (f"{role}.log" if incarnation == 1 else f"{role}.{incarnation}.log")


def incarnation_logs(run_dir: str | Path, role: str) -> list[Path]:
    """A role's logs in the order its incarnations ran (worker0.log, worker0.2.log, ...): the main
    role of a cluster restarted as a whole logs its steps across them."""
    logs, number = [], 1
    while (path := log_path(run_dir, role, number)).is_file():
        logs.append(path)
        number += 1
    return logs



# The evaluation of a mode's last checkpoint: its log, its event folder, and the rules for the log.
EVAL_RULES = "eval_rules.yaml"


def eval_log(run_dir: str | Path, mode: str) -> Path:
    return Path(run_dir) / f"eval_{mode}.log"


def eval_dir(run_dir: str | Path, mode: str) -> Path:
    return Path(run_dir) / f"eval_{mode}"


def train_dir(run_dir: str | Path, mode: str) -> Path:
    return Path(run_dir) / f"train_{mode}"


def repetition_dir(run_dir: str | Path, number: int) -> Path:
    """Where repetition ``number`` (2, 3, ...) of a run's standalone/cluster pair keeps its logs
    and checkpoints; the first pair's are in the run folder itself."""
    return Path(run_dir) / "repetitions" / str(number)
