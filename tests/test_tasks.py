"""tasks.py: how a task ends when a view raises (no subprocess: the wrapper itself)."""

from __future__ import annotations

import pytest
from invoke import Context, Exit

import tasks
from reprokit import views
from reprokit.settings import Settings


def _interrupted(out: object, settings: Settings) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("starts_roles, said", [(False, "interrupted"), (True, "interrupted: every role was stopped")])
def test_ctrl_c_says_every_role_was_stopped_only_for_a_task_that_starts_roles(
        monkeypatch: pytest.MonkeyPatch, starts_roles: bool, said: str) -> None:
    """`invoke data` interrupted has no role to stop; `invoke reproduce` interrupted has."""
    monkeypatch.setattr(tasks, "_RUN_ROLES", {_interrupted} if starts_roles else {views.reproduce})
    with pytest.raises(Exit) as caught:
        tasks._run(_interrupted, Context())
    assert (said, 130) == (caught.value.message, caught.value.code)
