"""The offline path to the image: a debootstrap'ed Debian base and TensorFlow wheels from the host.

With no registry, ``tensorflow/tensorflow:2.21.0`` cannot be pulled, so ``build_base_image`` makes
a minimal Debian bookworm with debootstrap and imports it, and ``download_wheels`` fetches
TensorFlow for its Python 3.11 on the host, because pip inside a container may not reach PyPI.
docker/Dockerfile then installs the wheels only into a base that lacks TensorFlow.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import docker.errors

import docker
from reprokit import commands
from reprokit.commands import Echo, silent
from reprokit.errors import DockerError
from reprokit.files import file_digest, write_json
from reprokit.run.containers.engine import connect
from reprokit.run.containers.image import (
    MANIFEST,
    OFFLINE_BASE,
    REGISTRY_BASE,
    ROOT,
    SLOW_TIMEOUT_S,
    TF_REQUIREMENT,
    find_image,
    require_image,
)

DEBIAN_MIRROR = "http://deb.debian.org/debian"
# python3-pip installs the wheels; net-tools is the article's ifconfig; iproute2 and procps let a
# person look around a running role (ip addr, ps); ca-certificates for any later HTTPS.
BASE_PACKAGES = ("python3", "python3-pip", "net-tools", "iproute2", "procps", "ca-certificates")
BOOKWORM_GLIBC_MINOR = 36  # bookworm ships glibc 2.36: any manylinux_2_17..2_36 wheel runs there



# -- wheels ----------------------------------------------------------------------------------


def wheel_platforms(glibc_minor: int = BOOKWORM_GLIBC_MINOR) -> list[str]:
    """Every manylinux x86_64 tag a glibc 2.<minor> system runs, newest first (pip wants all)."""
    return [f"manylinux_2_{m}_x86_64" for m in range(glibc_minor, 16, -1)] + [
        "manylinux2014_x86_64"
    ]


def pip_download_argv(
    dest: Path, requirement: str = TF_REQUIREMENT, python: str = "3.11"
) -> list[str]:
    """``pip download`` of ``requirement`` and its dependencies as wheels for CPython ``python``."""
    argv = [sys.executable, "-m", "pip", "download", "--dest", str(dest), "--only-binary=:all:"]
    argv += ["--implementation", "cp", "--python-version", python]
    argv += ["--abi", "cp" + python.replace(".", "")]
    for platform in wheel_platforms():
        argv += ["--platform", platform]
    return argv + [requirement]


@dataclass(frozen=True)
class WheelSet:
    """The wheels in ``dest`` as recorded in its manifest; ``downloaded`` is False when skipped."""

    dest: Path
    requirement: str
    files: tuple[str, ...]
    size: int
    downloaded: bool


def read_wheel_manifest(dest: Path, requirement: str, python: str) -> dict[str, int] | None:
    """Each wheel's size, if the manifest is for this requirement and all its wheels are intact."""
    try:
        manifest = json.loads((dest / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if (manifest.get("requirement"), manifest.get("python")) != (requirement, python):
        return None
    sizes: dict[str, int] = {}
    for name, facts in (manifest.get("wheels") or {}).items():
        path = dest / name
        if not path.is_file() or path.stat().st_size != facts.get("size"):
            return None
        if file_digest(path) != facts.get("sha256"):
            return None
        sizes[name] = path.stat().st_size
    return sizes or None


def download_wheels(
    dest: Path = ROOT / "wheels",
    requirement: str = TF_REQUIREMENT,
    echo: Echo = silent,
    *,
    python: str = "3.11",
    force: bool = False,
) -> WheelSet:
    """Fetch the wheels the offline image installs; skip when the manifest says they are all there.

    pip downloads into a fresh staging folder, so the manifest lists exactly one resolved set and
    no stale wheel of an earlier requirement lingers beside it.
    """
    sizes = None if force else read_wheel_manifest(dest, requirement, python)
    if sizes is not None:
        return WheelSet(dest, requirement, tuple(sorted(sizes)), sum(sizes.values()), False)
    staging = dest / ".download"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    wheels: dict[str, dict[str, object]] = {}
    try:
        commands.run(
            pip_download_argv(staging, requirement, python),
            echo=echo,
            live=True,
            hint=f"pip needs PyPI to download {requirement}; check `pip config list` and the "
            f"network, and that the release has CPython {python} manylinux x86_64 wheels",
        )
        (dest / MANIFEST).unlink(missing_ok=True)  # from here on the old set is incomplete
        for old in dest.glob("*.whl"):
            old.unlink()
        for wheel in sorted(staging.glob("*.whl")):
            wheels[wheel.name] = {"size": wheel.stat().st_size, "sha256": file_digest(wheel)}
            wheel.replace(dest / wheel.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    manifest = {"requirement": requirement, "python": python, "platforms": wheel_platforms()}
    write_json(dest / MANIFEST, {**manifest, "wheels": wheels})
    size = sum((dest / name).stat().st_size for name in wheels)
    return WheelSet(dest, requirement, tuple(sorted(wheels)), size, downloaded=True)


# -- the offline base ------------------------------------------------------------------------


def debootstrap_argv(
    rootfs: Path,
    suite: str = "bookworm",
    mirror: str = DEBIAN_MIRROR,
    packages: tuple[str, ...] = BASE_PACKAGES,
) -> list[str]:
    """A minimal Debian ``suite`` with ``packages`` into ``rootfs``."""
    return [
        "debootstrap",
        "--variant=minbase",
        "--include=" + ",".join(packages),
        suite,
        str(rootfs),
        mirror,
    ]


def import_changes(suite: str = "bookworm", mirror: str = DEBIAN_MIRROR) -> list[str]:
    """Dockerfile lines ``docker import`` applies: what a tarball cannot say (PATH, CMD, labels)."""
    return [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        'CMD ["/bin/bash"]',
        f'LABEL reprokit.debootstrap="variant=minbase suite={suite} mirror={mirror}" '
        f'reprokit.debootstrap.include="{",".join(BASE_PACKAGES)}"',
    ]


@dataclass(frozen=True)
class BaseImage:
    """The offline base image; ``built`` is False when the tag already existed."""

    tag: str
    id: str
    size: int
    built: bool


def split_tag(tag: str) -> tuple[str, str]:
    """``name:version`` as the import API wants it; a ':' before the last '/' is a registry port."""
    name, colon, version = tag.rpartition(":")
    if not colon or "/" in version:
        return tag, "latest"
    return name, version


def _remove_tree(path: Path, echo: Echo) -> None:
    """Remove a rootfs, even after a crashed debootstrap: unmount leftovers, never cross mounts."""
    if not path.exists():
        return
    prefix = str(path.resolve()) + "/"
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(prefix)), reverse=True):
        commands.run(["umount", "--lazy", mount], echo=echo)
    # --one-file-system: a bind mount of the host's /dev must never be emptied by mistake.
    commands.run(["rm", "-rf", "--one-file-system", str(path)], echo=echo)


def build_base_image(
    tag: str = OFFLINE_BASE,
    echo: Echo = silent,
    *,
    force: bool = False,
    suite: str = "bookworm",
    mirror: str = DEBIAN_MIRROR,
    workdir: Path = ROOT / "build",
    client: docker.DockerClient | None = None,
) -> BaseImage:
    """debootstrap a minimal Debian, tar it and import it as ``tag``; skip if the tag exists."""
    client = client or connect(timeout=SLOW_TIMEOUT_S)
    existing = find_image(tag, client)
    if existing is not None and not force:
        return BaseImage(tag, existing.id, existing.size, built=False)
    if shutil.which("debootstrap") is None:
        raise DockerError(
            "debootstrap is not installed; it builds the offline base image",
            f"apt-get install debootstrap, or use a registry base: --base {REGISTRY_BASE}",
        )
    if os.geteuid() != 0:
        raise DockerError(
            "debootstrap must run as root (it chroots and creates device files)",
            "rerun as root (sudo), or use a registry base: --base " + REGISTRY_BASE,
        )
    work = workdir / "debian-base"
    rootfs, tarball = work / "rootfs", work / "rootfs.tar"
    try:
        _remove_tree(work, echo)
        work.mkdir(parents=True)
        commands.run(
            debootstrap_argv(rootfs, suite, mirror),
            echo=echo,
            live=True,
            hint=f"debootstrap needs {mirror} over HTTP; see the log tail above",
        )
        # The .debs and package lists are ~100 MB the image never uses (apt-get update refetches).
        for cache in [
            *rootfs.glob("var/cache/apt/archives/*.deb"),
            *rootfs.glob("var/lib/apt/lists/*_*"),
        ]:
            cache.unlink()
        commands.run(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], echo=echo
        )
        repository, version = split_tag(tag)
        echo(f"importing {tarball} ({tarball.stat().st_size // 2**20} MiB) as {tag}")
        try:
            client.api.import_image_from_file(
                str(tarball), repository, version, changes=import_changes(suite, mirror)
            )
        except docker.errors.APIError as error:
            raise DockerError(
                f"docker import of {tarball} as {tag} failed: {error}", "see `docker info`"
            ) from error
    finally:
        _remove_tree(work, echo)
    image = require_image(tag, client)
    return BaseImage(tag, image.id, image.size, built=True)
