"""The programs a run can train: which trainer file patches/series makes for each program and mode.

The article's two trainers, and the lesson's, stacked on them, whose standalone trainer is its
cluster trainer's fair baseline. These are facts about the series, so they live beside it; a test
keeps them true (every file named here is one the series makes).
"""

from __future__ import annotations

PROGRAMS: dict[str, dict[str, str]] = {
    "article": {"standalone": "cifar10_standalone_train.py", "cluster": "cifar10_cluster_train.py"},
    "lesson": {"standalone": "cifar10_lesson_standalone_train.py", "cluster": "cifar10_lesson_cluster_train.py"},
}


def trainer_files() -> set[str]:
    """Every trainer file a program runs, in any mode."""
    return {file for modes in PROGRAMS.values() for file in modes.values()}
