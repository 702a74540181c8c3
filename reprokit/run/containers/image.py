"""The image the roles run in: a tag that hashes its inputs, the build, a check inside it, and
which image a run uses when none is named.

One docker/Dockerfile serves two bases: the registry's ``tensorflow/tensorflow:2.21.0``, or the
offline Debian base plus wheels (see ``reprokit.run.containers.offline``). The tag hashes every input, so an
existing tag means "already built from exactly these" and the build is skipped.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors
from docker.models.images import Image

import docker
from reprokit.commands import Echo, silent
from reprokit.errors import DockerError
from reprokit.run.containers.engine import RUN_LABEL, connect
from reprokit.run.containers.engine_json import BuildChunk

TF_VERSION = "2.21.0"
TF_REQUIREMENT = f"tensorflow-cpu=={TF_VERSION}"
REGISTRY_BASE = f"tensorflow/tensorflow:{TF_VERSION}"
OFFLINE_BASE = "reprokit/debian-base:bookworm"
IMAGE_REPOSITORY = "reprokit/tf-cluster"
IMAGE_ENV = "REPROKIT_IMAGE"  # the image a run uses when the command line names none
ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = "docker/Dockerfile"
ROLE_SERVER = "reprokit/run/role_server.py"
MANIFEST = "manifest.json"  # in wheels/, written by reprokit.run.containers.offline.download_wheels
SLOW_TIMEOUT_S = 3600  # a build stays silent for minutes while pip unpacks TensorFlow
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # the engine colours a step's stderr red
CHECK_SCRIPT = (
    "import shutil; print('ifconfig', shutil.which('ifconfig') or 'missing'); "
    "import tensorflow as tf; print('tensorflow', tf.__version__)"
)



@dataclass(frozen=True)
class ImageInputs:
    """Everything that decides what the image contains; ``image_tag`` hashes all of it."""

    dockerfile: bytes
    role_server: bytes
    base: str  # the reference as given, e.g. tensorflow/tensorflow:2.21.0
    base_id: str  # what it resolved to here (sha256:...)
    wheel_manifest: bytes  # b"" when there are no wheels
    tf_requirement: str = TF_REQUIREMENT
    tf_version: str = TF_VERSION


def image_digest(inputs: ImageInputs) -> str:
    """SHA-256 over the inputs, each length-prefixed so that no two input sets can collide."""
    digest = hashlib.sha256()
    fields = [inputs.dockerfile, inputs.role_server, inputs.base.encode(), inputs.base_id.encode()]
    fields += [inputs.wheel_manifest, inputs.tf_requirement.encode(), inputs.tf_version.encode()]
    for value in fields:
        digest.update(len(value).to_bytes(8, "big") + value)
    return digest.hexdigest()


def image_tag(inputs: ImageInputs) -> str:
    """``reprokit/tf-cluster:tf2.21.0-<12 hex>``: equal tags mean equal inputs."""
    return f"{IMAGE_REPOSITORY}:tf{inputs.tf_version}-{image_digest(inputs)[:12]}"


@dataclass(frozen=True)
class ImageInfo:
    """A built image; ``built`` is False when an image with these exact inputs already existed."""

    tag: str
    id: str
    base: str
    tf_version: str
    built: bool
    size: int = 0


def _info(tag: str, image: Image, built: bool) -> ImageInfo:
    labels = image.labels or {}
    base = labels.get("org.opencontainers.image.base.name", "")
    return ImageInfo(
        tag,
        image.id or "",
        base,
        labels.get("reprokit.tf-version", ""),
        built,
        image.attrs.get("Size", 0),
    )


def find_image(tag: str, client: docker.DockerClient | None = None) -> ImageInfo | None:
    """The image called ``tag``, or None."""
    client = client or connect()
    try:
        return _info(tag, client.images.get(tag), built=False)
    except docker.errors.ImageNotFound:
        return None


def require_image(tag: str, client: docker.DockerClient | None = None) -> ImageInfo:
    """The image called ``tag``; DockerError saying how to build it when it is missing."""
    found = find_image(tag, client)
    if found is None:
        raise DockerError(
            f"image {tag} missing: run `invoke build-image`",
            f"offline: `invoke build-base-image`, then `invoke build-image --base {OFFLINE_BASE}`",
        )
    return found


def choose_base(client: docker.DockerClient | None = None) -> str:
    """The registry base if it is here; else the offline base if that is here; else the
    registry base (which `build_image` then pulls)."""
    client = client or connect()
    if find_image(REGISTRY_BASE, client) is None and find_image(OFFLINE_BASE, client) is not None:
        return OFFLINE_BASE
    return REGISTRY_BASE


def default_image(client: docker.DockerClient, root: Path = ROOT) -> str:
    """The tag `invoke build-image` makes here, on `choose_base`'s base; a DockerError saying
    how to get a base when none is here. Nothing is pulled: picking an image must not
    download 2 GB behind a person's back."""
    base = choose_base(client)
    if find_image(base, client) is None:
        raise DockerError(
            f"no base for the kit's image here: neither {REGISTRY_BASE} nor {OFFLINE_BASE}",
            "run `invoke build-image` (pulls the registry base); with no registry: `invoke build-base-image`, "
            "`invoke download-wheels`, then `invoke build-image`",
        )
    return expected_tag(base, client, root)


def choose_image(tag: str | None, client: docker.DockerClient) -> ImageInfo:
    """The image a run's roles use: the one named, else $REPROKIT_IMAGE, else `default_image`;
    a DockerError saying how to build it when it is not here."""
    return require_image(tag or os.environ.get(IMAGE_ENV) or default_image(client), client)


def read_inputs(
    base: str, base_id: str, root: Path = ROOT, tf_requirement: str = TF_REQUIREMENT
) -> ImageInputs:
    """The inputs as they are on disk now (the wheel manifest is optional)."""
    manifest = root / "wheels" / MANIFEST
    return ImageInputs(
        dockerfile=(root / DOCKERFILE).read_bytes(),
        role_server=(root / ROLE_SERVER).read_bytes(),
        base=base,
        base_id=base_id,
        wheel_manifest=manifest.read_bytes() if manifest.is_file() else b"",
        tf_requirement=tf_requirement,
    )


@dataclass
class BuildLog:
    """Turns the engine's build stream into lines and keeps the current step's lines for errors."""

    echo: Echo = silent
    step: str = ""
    step_lines: list[str] = field(default_factory=list)
    error: str = ""
    _partial: str = ""

    def feed(self, chunk: BuildChunk) -> None:
        """Take one decoded chunk of ``client.api.build(..., decode=True)``."""
        if "stream" in chunk:
            *lines, self._partial = (self._partial + chunk["stream"]).split("\n")
            for line in lines:
                self._line(line)
        elif "status" in chunk and "progress" not in chunk:  # a pull by FROM; no progress bars
            self._line(str(chunk["status"]) + (f" {chunk['id']}" if "id" in chunk else ""))
        if "error" in chunk:
            self.finish()
            self.error = str((chunk.get("errorDetail") or {}).get("message") or chunk["error"])
            self._line("ERROR: " + self.error)

    def finish(self) -> None:
        if self._partial:
            self._line(self._partial)
            self._partial = ""

    def tail(self, lines: int = 25) -> str:
        return "\n".join(self.step_lines[-lines:])

    def _line(self, line: str) -> None:
        plain = ANSI_ESCAPE.sub("", line).rstrip("\r")
        if line and not plain:
            return  # only a colour switch
        line = plain
        if line.startswith("Step ") and " : " in line:
            self.step, self.step_lines = line, []
        else:
            self.step_lines.append(line)
        self.echo(line)


def build_error(tag: str, log: BuildLog) -> DockerError:
    """The failing step, the engine's message and that step's last lines of output."""
    where = f" at {log.step}" if log.step else ""
    tail = "\n".join("    " + line for line in log.tail().splitlines())
    return DockerError(
        f"building {tag} failed{where}: {log.error}\n  last output of that step:\n{tail}",
        "offline base? `invoke download-wheels` fills wheels/ (the build installs from it); "
        "otherwise fix the step above (docker/Dockerfile) and rerun `invoke build-image`",
    )


def _resolve_base(base: str, client: docker.DockerClient, echo: Echo) -> str:
    """The base's image id; pulled first when absent (which needs a registry)."""
    try:
        return str(client.images.get(base).id)
    except docker.errors.ImageNotFound:
        pass
    echo(f"pulling {base}")
    try:
        return str(client.images.pull(base).id)
    except docker.errors.APIError as error:
        raise DockerError(
            f"base image {base} is not here and could not be pulled: {error.explanation or error}",
            f"with no registry, build the offline base (`invoke build-base-image`) and pass "
            f"--base {OFFLINE_BASE}",
        ) from error


@dataclass(frozen=True)
class ImageCheck:
    """What a throwaway container of the image reported."""

    tf_version: str
    ifconfig: str  # its path, or "missing"


def check_image(tag: str, client: docker.DockerClient | None = None) -> ImageCheck:
    """Import TensorFlow and look for ifconfig in a container that is removed afterwards."""
    client = client or connect()
    try:
        out = client.containers.run(
            tag,
            ["python3", "-c", CHECK_SCRIPT],
            remove=True,
            network_disabled=True,
            environment={"TF_CPP_MIN_LOG_LEVEL": "2"},
            labels={RUN_LABEL: "image-check"},
        )
    except docker.errors.ContainerError as error:
        stderr = (
            error.stderr.decode(errors="replace")
            if isinstance(error.stderr, bytes)
            else str(error.stderr)
        )
        raise DockerError(
            f"the check inside {tag} failed (exit {error.exit_status}):\n{stderr[-2000:]}",
            "rebuild with `invoke build-image --force`",
        ) from error
    facts = dict(line.split(" ", 1) for line in out.decode().splitlines() if " " in line)
    return ImageCheck(facts.get("tensorflow", ""), facts.get("ifconfig", "missing"))


def expected_tag(base: str, client: docker.DockerClient | None = None, root: Path = ROOT) -> str:
    """The tag ``build_image(base)`` would produce now (the base must be here)."""
    client = client or connect()
    return image_tag(read_inputs(base, _resolve_base(base, client, silent), root))


def build_image(
    base: str = REGISTRY_BASE,
    force: bool = False,
    echo: Echo = silent,
    *,
    root: Path = ROOT,
    tf_requirement: str = TF_REQUIREMENT,
    client: docker.DockerClient | None = None,
) -> ImageInfo:
    """Build docker/Dockerfile on ``base`` unless its tag exists; then check TF and ifconfig."""
    client = client or connect(timeout=SLOW_TIMEOUT_S)
    inputs = read_inputs(base, _resolve_base(base, client, echo), root, tf_requirement)
    tag = image_tag(inputs)
    existing = find_image(tag, client)
    if existing is not None and not force:
        return existing
    log = BuildLog(echo)
    labels = {
        "reprokit.inputs-sha256": image_digest(inputs),
        "reprokit.tf-version": inputs.tf_version,
        "reprokit.base-id": inputs.base_id,
    }
    try:
        stream: Iterable[BuildChunk] = client.api.build(
            path=str(root),
            dockerfile=DOCKERFILE,
            tag=tag,
            decode=True,
            rm=True,
            forcerm=True,
            nocache=force,
            pull=False,
            timeout=SLOW_TIMEOUT_S,
            labels=labels,
            buildargs={"BASE_IMAGE": base, "TF_REQUIREMENT": tf_requirement},
        )
        for chunk in stream:
            log.feed(chunk)
    except docker.errors.APIError as error:
        log.error = str(error.explanation or error)
    log.finish()
    if log.error:
        raise build_error(tag, log)
    check = check_image(tag, client)
    if check.tf_version != inputs.tf_version or check.ifconfig == "missing":
        client.images.remove(tag)  # a tag that exists must mean a good image
        raise DockerError(
            f"{tag} was built but reports tensorflow {check.tf_version!r} (expected "
            f"{inputs.tf_version}) and ifconfig {check.ifconfig!r}; the tag was removed",
            f"does {base} bring another TensorFlow? pass --base {OFFLINE_BASE} or {REGISTRY_BASE}",
        )
    return _info(tag, client.images.get(tag), built=True)
