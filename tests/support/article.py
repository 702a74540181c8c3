"""The article's step tables (step -> examples/sec), read from its logs in expected_logs/article:
the one place they are written is the logs themselves."""

from __future__ import annotations

from reprokit.judge.logs import parse_log, step_fields
from tests.support import REPO

ARTICLE_LOGS = REPO / "expected_logs" / "article"


def article_steps(mode: str) -> dict[int, float]:
    return {s.step: s.examples_per_sec for s in step_fields(parse_log(ARTICLE_LOGS / f"{mode}.log", mode))}


ARTICLE_STANDALONE_STEPS = article_steps("standalone")
ARTICLE_CLUSTER_STEPS = article_steps("cluster")
