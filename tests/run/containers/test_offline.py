"""The offline path: pip and debootstrap command lines, the wheel manifest, the imported base."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

import docker
from reprokit.errors import DockerError
from reprokit.run.containers.offline import (
    BASE_PACKAGES,
    BaseImage,
    build_base_image,
    debootstrap_argv,
    download_wheels,
    import_changes,
    pip_download_argv,
    read_wheel_manifest,
    split_tag,
    wheel_platforms,
)

REQUIREMENT = "tensorflow-cpu==2.21.0"


def test_pip_downloads_cpython_311_manylinux_wheels_only() -> None:
    """The argv asks for binary wheels for CPython 3.11 on any glibc up to bookworm's 2.36."""
    argv = pip_download_argv(Path("/w"), REQUIREMENT, "3.11")
    assert [sys.executable, "-m", "pip", "download", "--dest", "/w"] == argv[:6]
    assert "--only-binary=:all:" in argv
    assert ["--implementation", "cp", "--python-version", "3.11", "--abi", "cp311"] == argv[7:13]
    platforms = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--platform"]
    assert wheel_platforms() == platforms
    assert REQUIREMENT == argv[-1]


def test_wheel_platforms_run_from_bookworm_glibc_down_to_manylinux2014() -> None:
    """glibc 2.36 runs every manylinux_2_17..2_36 wheel, newest first, and the 2014 alias."""
    platforms = wheel_platforms(36)
    assert "manylinux_2_36_x86_64" == platforms[0]
    assert ["manylinux_2_17_x86_64", "manylinux2014_x86_64"] == platforms[-2:]
    assert 21 == len(platforms)


def test_debootstrap_makes_a_minbase_bookworm_with_python_pip_and_ifconfig() -> None:
    """The exact command line, with the packages the image needs."""
    expected = [
        "debootstrap",
        "--variant=minbase",
        "--include=python3,python3-pip,net-tools,iproute2,procps,ca-certificates",
        "bookworm",
        "/b/rootfs",
        "http://deb.debian.org/debian",
    ]
    assert expected == debootstrap_argv(Path("/b/rootfs"))
    assert {"python3", "python3-pip", "net-tools", "ca-certificates", "procps"} <= set(
        BASE_PACKAGES
    )


def test_the_imported_base_gets_a_path_and_a_shell() -> None:
    """A tarball carries no environment, so the import sets PATH and CMD."""
    changes = import_changes()
    assert "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" in changes
    assert 'CMD ["/bin/bash"]' in changes


def test_a_tag_splits_into_name_and_version_and_a_registry_port_is_not_a_version() -> None:
    assert ("reprokit/debian-base", "bookworm") == split_tag("reprokit/debian-base:bookworm")
    assert ("reprokit/debian-base", "latest") == split_tag("reprokit/debian-base")
    assert ("localhost:5000/base", "latest") == split_tag("localhost:5000/base")


def write_wheels(dest: Path, requirement: str = REQUIREMENT) -> None:
    """Two small fake wheels and the manifest download_wheels would have written for them."""
    wheels = {}
    for name, body in [("a-1-py3-none-any.whl", b"aaaa"), ("b-2-py3-none-any.whl", b"bb")]:
        (dest / name).write_bytes(body)
        wheels[name] = {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    manifest = {"requirement": requirement, "python": "3.11", "wheels": wheels}
    (dest / "manifest.json").write_text(json.dumps(manifest))


def test_a_complete_manifest_lists_every_wheel_with_its_size(tmp_path: Path) -> None:
    write_wheels(tmp_path)
    expected = {"a-1-py3-none-any.whl": 4, "b-2-py3-none-any.whl": 2}
    assert expected == read_wheel_manifest(tmp_path, REQUIREMENT, "3.11")


def test_a_missing_or_changed_wheel_makes_the_set_incomplete(tmp_path: Path) -> None:
    write_wheels(tmp_path)
    (tmp_path / "b-2-py3-none-any.whl").write_bytes(b"BB")  # same size, other bytes
    assert None is read_wheel_manifest(tmp_path, REQUIREMENT, "3.11")
    (tmp_path / "b-2-py3-none-any.whl").unlink()
    assert None is read_wheel_manifest(tmp_path, REQUIREMENT, "3.11")


def test_a_manifest_for_another_requirement_or_python_does_not_count(tmp_path: Path) -> None:
    write_wheels(tmp_path, "tensorflow-cpu==2.20.0")
    assert None is read_wheel_manifest(tmp_path, REQUIREMENT, "3.11")
    write_wheels(tmp_path)
    assert None is read_wheel_manifest(tmp_path, REQUIREMENT, "3.12")


def test_download_wheels_skips_pip_when_the_set_is_complete(tmp_path: Path) -> None:
    """No network needed: the manifest says everything is there, so pip is never run."""
    write_wheels(tmp_path)
    ran: list[str] = []
    wheel_set = download_wheels(tmp_path, REQUIREMENT, echo=ran.append)
    assert (False, 6, []) == (wheel_set.downloaded, wheel_set.size, ran)
    assert ("a-1-py3-none-any.whl", "b-2-py3-none-any.whl") == wheel_set.files


@pytest.mark.docker
def test_the_offline_base_has_python_311_pip_and_ifconfig(
    docker_client: docker.DockerClient,
    offline_base: BaseImage,
    no_leftover_containers: None,
) -> None:
    """The debootstrap'ed image runs, with Debian's Python 3.11 and the article's ifconfig."""
    script = "python3 --version; python3 -m pip --version >/dev/null && command -v ifconfig"
    out = docker_client.containers.run(offline_base.tag, ["sh", "-c", script], remove=True)
    lines = out.decode().split()
    assert ["Python", "/usr/sbin/ifconfig"] == [lines[0], lines[-1]]
    assert lines[1].startswith("3.11.")


@pytest.mark.docker
def test_a_second_base_build_finds_the_tag_and_builds_nothing(
    docker_client: docker.DockerClient,
    offline_base: BaseImage,
) -> None:
    """The tag exists (the fixture made or found it), so debootstrap does not run again."""
    rebuilt = build_base_image(offline_base.tag, client=docker_client)
    assert (False, offline_base.id) == (rebuilt.built, rebuilt.id)


@pytest.mark.docker
def test_without_debootstrap_the_base_build_says_what_to_install(
    docker_client: docker.DockerClient,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A PATH without debootstrap: the error names the package and the registry alternative."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DockerError) as caught:
        build_base_image("reprokit/never-built:test", client=docker_client, workdir=tmp_path)
    assert "debootstrap is not installed" in caught.value.message
    assert "apt-get install debootstrap" in caught.value.hint
    assert "--base tensorflow/tensorflow:2.21.0" in caught.value.hint
