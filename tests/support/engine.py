"""The real Docker engine in tests (marked ``@pytest.mark.docker``); the fixtures are in conftest.

With no engine those tests skip, saying why; with ``REPROKIT_REQUIRE_DOCKER=1`` (CI) they fail
instead. The images they build are kept on purpose: they are the kit's cache, keyed by inputs.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

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


class EngineProxy:
    """A unix socket that forwards to the real engine until `stop()`: then every connection
    through it breaks and no new one is accepted, as when the engine stops. The engine itself
    and other users of it are untouched."""

    def __init__(self, path: Path, engine: str = "/var/run/docker.sock") -> None:
        self.path, self.engine = path, engine
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(64)
        self.live: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                near, _ = self.server.accept()
            except OSError:
                return
            far = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            far.connect(self.engine)
            self.live += [near, far]
            for a, b in ((near, far), (far, near)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        self.stopped.set()
        self.server.close()
        self.path.unlink(missing_ok=True)
        for end in self.live:
            try:
                end.shutdown(socket.SHUT_RDWR)
                end.close()
            except OSError:
                pass
