"""Fixtures for tests that use the real Docker engine (marked ``@pytest.mark.docker``).

With no engine they skip, saying why; with ``REPROKIT_REQUIRE_DOCKER=1`` (CI) they fail instead.
The images they build are kept on purpose: they are the kit's cache, keyed by their inputs.
A conftest can share these with ``from docker_support import docker_client, offline_image``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

import docker
from reprokit.errors import DockerError
from reprokit.run.containers.engine import RUN_LABEL, connect
from reprokit.run.containers.image import ImageInfo, build_image
from reprokit.run.containers.offline import (
    BaseImage,
    WheelSet,
    build_base_image,
    download_wheels,
)

REQUIRE_DOCKER = "REPROKIT_REQUIRE_DOCKER"


def docker_required() -> bool:
    return os.environ.get(REQUIRE_DOCKER) == "1"


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    """The real engine, or a skip (a failure under REPROKIT_REQUIRE_DOCKER=1) saying why not."""
    try:
        client = connect(timeout=3600)
    except DockerError as error:
        if docker_required():
            pytest.fail(f"{REQUIRE_DOCKER}=1 but Docker is not usable: {error}")
        pytest.skip(
            f"Docker is not usable ({error.message}); set {REQUIRE_DOCKER}=1 to fail instead"
        )
    yield client
    client.close()


def suspects(client: docker.DockerClient, before: set[str]) -> set[str]:
    """Containers created since ``before`` that no other kit run claims by its own label."""
    found = set()
    for container in client.containers.list(all=True):
        run = container.labels.get(RUN_LABEL, "image-check")
        if container.id not in before and run == "image-check":
            found.add(f"{container.name} (from {container.attrs['Config']['Image']})")
    return found


@pytest.fixture()
def no_leftover_containers(docker_client: docker.DockerClient) -> Iterator[None]:
    """Fails the test if it leaves a container behind, running or not.

    Other kit runs may share the engine: their containers carry their own ``reprokit.run``
    label and are not counted, and short-lived ones (an image check) get a few seconds to go.
    """
    before = {container.id or "" for container in docker_client.containers.list(all=True)}
    yield
    deadline = time.monotonic() + 15
    while suspects(docker_client, before) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert set() == suspects(docker_client, before)


@pytest.fixture(scope="session")
def offline_base(docker_client: docker.DockerClient) -> BaseImage:
    """The debootstrap'ed base (about a minute the first time, then found by its tag)."""
    return build_base_image(client=docker_client)


@pytest.fixture(scope="session")
def wheels() -> WheelSet:
    """The TensorFlow wheels in wheels/ (downloaded once, then found by their manifest)."""
    return download_wheels()


@pytest.fixture(scope="session")
def offline_image(
    docker_client: docker.DockerClient, offline_base: BaseImage, wheels: WheelSet
) -> ImageInfo:
    """The kit's image on the offline base (minutes the first time, then found by its tag)."""
    return build_image(offline_base.tag, client=docker_client)
