"""The registry: one typed config per backend, filled from the settings, and one builder."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprokit.errors import KitError
from reprokit.run.containers.mounts import RunInputs
from reprokit.run.local import LocalBackend
from reprokit.run.registry import (
    BackendConfig,
    backend_config,
    build_backend,
    make_backend,
)
from reprokit.settings import Settings, from_mapping
from tests.support.kit import kit_watchdog, repo_config


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return from_mapping({**repo_config(), "runs_dir": "runs", "data_dir": "data", "sources_dir": "build/patched",
                         "probe_timeout_s": 7.5, "first_step_timeout_s": 30.0}, root=tmp_path)


def test_the_config_carries_the_settings_folders_timeouts_and_watchdog(settings: Settings, tmp_path: Path) -> None:
    """The containers mount the settings' sources and data, and the native fixes under the build folder."""
    config = backend_config(settings, "swarm", "auto", placement={"ps": "node-a"}, image="kit:1", deploys=False)
    expected = BackendConfig("swarm", RunInputs(tmp_path / "build" / "patched", tmp_path / "data",
                                                tmp_path / "build" / "native"), settings.watchdog, "auto",
                             placement={"ps": "node-a"}, image="kit:1", deploys=False, echo=config.echo)
    assert expected == config
    assert (7.5, 30.0) == (config.watchdog.probe_s, config.watchdog.first_step_s)


def test_make_backend_builds_the_local_backend_with_the_settings_timeouts(settings: Settings) -> None:
    """`isolation none` needs no namespace, so this runs anywhere."""
    backend = make_backend(settings, "local", "none")
    assert isinstance(backend, LocalBackend)
    assert (7.5, settings.watchdog, False) == (backend.watchdog.probe_s, backend.watchdog,
                                              backend.isolation.isolated)


def test_an_unknown_backend_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    config = BackendConfig("kubernetes", RunInputs(tmp_path, tmp_path, tmp_path), kit_watchdog(), "auto")
    with pytest.raises(KitError) as caught:
        build_backend(config)
    assert "unknown backend 'kubernetes'" in str(caught.value)
    assert "local, docker, hosts, swarm" in caught.value.hint

