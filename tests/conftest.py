"""Every fixture the tests share. Helper functions live in tests/support/ and are imported from
there (`from tests.support.processes import wait_for`); fixtures are found here by pytest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import docker
from reprokit.data.prepare import prepare_data
from reprokit.errors import DockerError
from reprokit.run.containers.engine import connect
from reprokit.run.containers.image import (
    REGISTRY_BASE,
    ImageInfo,
    build_image,
    find_image,
    require_image,
)
from reprokit.run.containers.offline import (
    BaseImage,
    WheelSet,
    build_base_image,
    download_wheels,
)
from reprokit.settings import Settings, from_mapping
from reprokit.sources.upstream import CHECKSUM_FILE, sha256_file
from reprokit.sources.workspace import apply_all
from tests.support import REPO
from tests.support.engine import REQUIRE_DOCKER, docker_required, suspects
from tests.support.kit import RECORDS, KitInputs
from tests.support.processes import our_processes

ROOT = REPO
PATCH_SAMPLES = ROOT / "tests" / "samples" / "patches"


@pytest.fixture(autouse=True, scope="session")
def ctrl_c_as_in_a_terminal() -> Iterator[None]:
    """A test run started in the background by a non-interactive shell (`pytest &`) inherits
    SIGINT ignored, and so would every process it starts: the Ctrl-C tests would see nothing.
    SIGINT gets Python's own handler, as in a terminal, in the tests and so in their children."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture
def repo_root() -> Path:
    """The real checkout: upstream/, patches/ and expected_logs/ as committed."""
    return ROOT


@pytest.fixture
def patch_sample() -> Callable[[str], Path]:
    """The path of one bad sample under tests/samples/patches/, which must exist."""

    def sample(name: str) -> Path:
        path = PATCH_SAMPLES / name
        assert path.is_file(), f"missing sample {path}"
        return path

    return sample


@pytest.fixture
def kit(tmp_path: Path) -> Path:
    """A scratch copy of the kit's inputs (upstream/, patches/, expected_logs/) to break at will."""
    root = tmp_path / "kit"
    for name in ("upstream", "patches", "expected_logs"):
        shutil.copytree(ROOT / name, root / name)
    return root


@pytest.fixture
def cli_kit(tmp_path: Path) -> Path:
    """A runnable copy of the kit: its inputs, the package, tasks.py and invoke.yaml (the CLI tests
    run `python -m invoke` in it; `kit` above holds the inputs only)."""
    for name in ("upstream", "patches", "expected_logs", "reprokit"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("tasks.py", "invoke.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.fixture
def settings_for() -> Callable[[Path], Settings]:
    """Settings as invoke.yaml gives them, with every path under `root`."""

    def settings(root: Path) -> Settings:
        return from_mapping({"upstream_dir": "upstream", "patches_dir": "patches",
                             "sources_dir": "build/patched", "data_dir": "data", "runs_dir": "runs",
                             "rules": "expected_logs/rules.yaml"}, root)

    return settings


@pytest.fixture
def record_sums() -> Callable[[Path], None]:
    """Re-record upstream/SHA256SUMS from the files as they are: what a reviewer does after a change."""

    def record(upstream_dir: Path) -> None:
        names = [l.split()[1] for l in (upstream_dir / CHECKSUM_FILE).read_text().splitlines() if l.strip()]
        (upstream_dir / CHECKSUM_FILE).write_text(
            "".join(f"{sha256_file(upstream_dir / n)}  {n}\n" for n in names))

    return record


# --- processes --------------------------------------------------------------------------


@pytest.fixture
def no_leftover_processes(tmp_path: Path) -> Iterator[None]:
    """After the test, no process it started may still run (role servers, trainers, supervisors).

    Modules that start processes use it for every test:
    ``pytestmark = pytest.mark.usefixtures("no_leftover_processes")``."""
    yield
    needles = (str(tmp_path),)
    deadline = time.monotonic() + 5  # a SIGKILL by the death signal is delivered asynchronously
    left = our_processes(*needles)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = our_processes(*needles)
    for proc in left:  # don't let one failure spoil the tests after it
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert [] == [f"{p.pid}: {p.cmdline[:200]}" for p in left], "processes left running after the test"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """``small_disk(kib)``: a folder on a tmpfs of that size, to fill up for real (needs root)."""
    mounts: list[Path] = []

    def make(kib: int) -> Path:
        if os.geteuid() != 0:
            pytest.skip("a full disk is a small tmpfs here, and mounting one needs root (CI runs as root)")
        path = tmp_path / f"disk{len(mounts)}"
        path.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k,mode=0755", "tmpfs", str(path)], check=True)
        mounts.append(path)
        return path

    yield make
    for path in mounts:
        subprocess.run(["umount", "--lazy", str(path)], check=False)


@pytest.fixture(scope="session")
def kit_inputs(tmp_path_factory: pytest.TempPathFactory) -> KitInputs:
    """Generated data (200 records a file) and the patched sources, once per session."""
    root = tmp_path_factory.mktemp("kit-inputs")
    data = prepare_data("synthetic", root / "data", records_per_file=RECORDS)
    applied = apply_all(REPO / "upstream", REPO / "patches", root / "patched")
    return KitInputs(data.data_dir, applied.out_dir.resolve())


# --- the Docker engine ------------------------------------------------------------------


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    """The real engine, or a skip (a failure under REPROKIT_REQUIRE_DOCKER=1) saying why not."""
    try:
        client = connect(timeout=3600)
    except DockerError as error:
        if docker_required():
            pytest.fail(f"{REQUIRE_DOCKER}=1 but Docker is not usable: {error}")
        pytest.skip(f"Docker is not usable ({error.message}); set {REQUIRE_DOCKER}=1 to fail instead")
    yield client
    client.close()


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
def offline_image(docker_client: docker.DockerClient, offline_base: BaseImage, wheels: WheelSet) -> ImageInfo:
    """The kit's image on the offline base (minutes the first time, then found by its tag)."""
    return build_image(offline_base.tag, client=docker_client)


@pytest.fixture(scope="session")
def kit_image(request: pytest.FixtureRequest, docker_client: docker.DockerClient) -> ImageInfo:
    """The image the backend picks by default, built first if missing (minutes, once)."""
    if os.environ.get("REPROKIT_IMAGE"):
        return require_image(os.environ["REPROKIT_IMAGE"], docker_client)
    if find_image(REGISTRY_BASE, docker_client) is not None:
        return build_image(REGISTRY_BASE, client=docker_client)
    info: ImageInfo = request.getfixturevalue("offline_image")
    return info


@pytest.fixture(scope="session")
def swarm(docker_client: docker.DockerClient) -> Iterator[docker.DockerClient]:
    """The engine as a swarm manager: the swarm there is used as it is; where there is none, a
    single-node one is made (advertised on 127.0.0.1 only) and left again at the end."""
    state = (docker_client.info().get("Swarm") or {}).get("LocalNodeState")
    made = state == "inactive"
    if made:
        docker_client.swarm.init(advertise_addr="127.0.0.1", listen_addr="127.0.0.1:2377")
    elif state != "active":
        pytest.fail(f"the engine's swarm is {state!r}: neither active nor inactive")
    yield docker_client
    if made:
        docker_client.swarm.leave(force=True)
