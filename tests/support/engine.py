"""The real Docker engine in tests (marked ``@pytest.mark.docker``); the fixtures are in conftest.

With no engine those tests skip, saying why; with ``REPROKIT_REQUIRE_DOCKER=1`` (CI) they fail
instead. The images they build are kept on purpose: they are the kit's cache, keyed by inputs.
"""

from __future__ import annotations

import os

import docker
from reprokit.run.containers.engine import RUN_LABEL

REQUIRE_DOCKER = "REPROKIT_REQUIRE_DOCKER"


def docker_required() -> bool:
    return os.environ.get(REQUIRE_DOCKER) == "1"


def suspects(client: docker.DockerClient, before: set[str]) -> set[str]:
    """Containers created since ``before`` that no other kit run claims by its own label."""
    found = set()
    for container in client.containers.list(all=True):
        run = container.labels.get(RUN_LABEL, "image-check")
        if container.id not in before and run == "image-check":
            found.add(f"{container.name} (from {container.attrs['Config']['Image']})")
    return found
