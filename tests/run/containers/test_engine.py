"""Connecting to Docker fails with a message a person can act on; leftovers are found by label."""

from __future__ import annotations

import uuid
from pathlib import Path

import docker.errors
import pytest

import docker
from reprokit.errors import DockerError
from reprokit.run.containers.engine import (
    RUN_LABEL,
    connect,
    diagnose,
    find_leftovers,
    remove_leftovers,
)

MISSING_SOCKET = (
    "Error while fetching server API version: ('Connection aborted.', "
    "FileNotFoundError(2, 'No such file or directory'))"
)
DENIED_SOCKET = (
    "Error while fetching server API version: ('Connection aborted.', "
    "PermissionError(13, 'Permission denied'))"
)


def test_a_missing_socket_says_so_and_suggests_starting_dockerd_or_the_local_backend() -> None:
    """The SDK's text for a missing socket becomes 'the socket ... does not exist'."""
    error = diagnose(docker.errors.DockerException(MISSING_SOCKET), "unix:///var/run/docker.sock")
    assert "the socket /var/run/docker.sock does not exist" in error.message
    assert "dockerd" in error.hint and "--backend local" in error.hint


def test_permission_denied_suggests_the_docker_group_or_the_local_backend() -> None:
    """The SDK's text for EACCES becomes 'permission denied' with the usermod command."""
    error = diagnose(docker.errors.DockerException(DENIED_SOCKET), "unix:///var/run/docker.sock")
    assert "permission denied on the Docker socket /var/run/docker.sock" == error.message
    assert "usermod -aG docker" in error.hint and "--backend local" in error.hint


def test_the_cause_chain_is_read_not_only_the_outer_message() -> None:
    """A PermissionError two levels down is still recognised."""
    try:
        try:
            raise PermissionError(13, "Permission denied")
        except PermissionError as inner:
            raise docker.errors.DockerException(
                "Error while fetching server API version"
            ) from inner
    except docker.errors.DockerException as outer:
        error = diagnose(outer, "unix:///run/docker.sock")
    assert error.message.startswith("permission denied")


def test_connecting_to_an_absent_socket_raises_docker_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real connection attempt to a socket path that does not exist (no engine needed)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    with pytest.raises(DockerError) as caught:
        connect(timeout=5)
    assert f"the socket {tmp_path}/absent.sock does not exist" in caught.value.message
    assert "--backend local" in str(caught.value)


def test_connecting_to_a_closed_port_says_the_engine_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Port 9 (discard) on localhost has no engine: 'refuses connections'."""
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    with pytest.raises(DockerError) as caught:
        connect(timeout=5)
    assert "refuses connections" in caught.value.message


@pytest.mark.docker
def test_connect_pings_the_real_engine(docker_client: docker.DockerClient) -> None:
    """The engine in the environment answers."""
    assert connect().ping() is True


@pytest.mark.docker
def test_leftovers_are_found_by_run_label_and_removed(
    docker_client: docker.DockerClient,
    no_leftover_containers: None,
) -> None:
    """A labelled network and container are found, removed, and then no longer found."""
    run = f"test-{uuid.uuid4().hex[:8]}"
    labels = {RUN_LABEL: run}
    network = docker_client.networks.create(f"reprokit-{run}", labels=labels)
    images = docker_client.images.list()
    if images:  # creating (not starting) a container needs some local image, any will do
        docker_client.containers.create(images[0], name=f"reprokit-{run}", labels=labels)
    try:
        found = find_leftovers(docker_client, value=run)
        expected = {("network", network.name)} | (
            {("container", f"reprokit-{run}")} if images else set()
        )
        assert expected == {(item.kind, item.name) for item in found}
        assert {run} == {item.run for item in found}
        sweep = remove_leftovers(docker_client, found)
        assert [] == sweep.failed
        if images:
            assert "container" == sweep.removed[0].kind  # before the network it might be on
        assert [] == find_leftovers(docker_client, value=run)
    finally:
        remove_leftovers(docker_client, find_leftovers(docker_client, value=run))
