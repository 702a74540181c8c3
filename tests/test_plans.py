"""A request becomes a plan once, at the boundary: options checked, the backend built from one
config with the settings' folders and watchdog, the cluster file read once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.errors import KitError
from reprokit.options import BenchRequest, Request, SweepRequest
from reprokit.run.cluster import Cluster
from reprokit.run.process_backend import ExternalServers, Loopback, ProcessBackend
from reprokit.settings import Settings, from_mapping
from tests.support.kit import repo_config


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return from_mapping({**repo_config(), "runs_dir": "runs", "data_dir": "data", "sources_dir": "build/patched",
                         "probe_timeout_s": 7.5, "first_step_timeout_s": 30.0}, root=tmp_path)


def test_a_reproduction_plan_builds_its_backend_with_the_settings_watchdog(settings: Settings) -> None:
    """`isolation none` needs no namespace, so this runs anywhere."""
    plan = Request(steps=31, backend="local", isolation="none").plan(settings)
    assert isinstance(plan.backend, ProcessBackend)
    assert (Loopback(False, "--isolation none was asked for"), settings.watchdog, 31) == \
        (plan.backend.network, plan.backend.watchdog, plan.options.steps)
    assert (7.5, 30.0) == (settings.watchdog.probe_s, settings.watchdog.first_step_s)


def test_the_client_plan_runs_on_the_external_servers(settings: Settings) -> None:
    cluster = Cluster("10.0.0.1:2222", ("10.0.0.2:2222",))
    plan = Request(steps=31, modes=("cluster",)).client_plan(settings, cluster)
    assert isinstance(plan.backend, ProcessBackend)
    assert ("external", ExternalServers(cluster), 1) == (plan.backend.name, plan.backend.network, plan.options.workers)


@pytest.mark.parametrize("request_, message", [
    (Request(backend="kubernetes"), "unknown --backend 'kubernetes'"),
    (Request(isolation="container"), "unknown --isolation 'container'"),
    (Request(backend="docker", link="1gbit"), "--link 1gbit shapes the links of simulated hosts"),
    (Request(backend="hosts", tuning="tuned"), "--tuning tuned runs the ps inside the client's process"),
    (BenchRequest(isolation="container"), "unknown --isolation 'container'"),
    (SweepRequest(link="fast"), "--link 'fast' is not a bandwidth"),
])
def test_a_bad_request_is_refused_before_any_backend_is_built(settings: Settings, request_: object,
                                                              message: str) -> None:
    with pytest.raises(KitError, match=message.replace("-", r"\-")):
        request_.plan(settings)  # type: ignore[attr-defined]
    assert not settings.runs_dir.exists()


def test_a_cluster_file_gives_the_worker_count_and_is_refused_on_a_backend_that_places_its_own(
        settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"ps": ["h:2222"], "worker": ["h:2223", "h:2224", "h:2225"],
                                "placement": {"ps": "node-a"}}))
    with pytest.raises(KitError, match="--cluster places the roles of a Swarm stack"):
        Request(backend="local", cluster_file=str(path)).plan(settings)
    assert 3 == Request(cluster_file=str(path)).options(settings, workers=3).workers
