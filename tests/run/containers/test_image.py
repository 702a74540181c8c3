"""The image: its tag hashes its inputs, its build streams and fails legibly, TF 2.21 runs in it."""

from __future__ import annotations

import dataclasses
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import docker.utils
import pytest

import docker
from reprokit.errors import DockerError
from reprokit.run.containers.image import (
    OFFLINE_BASE,
    REGISTRY_BASE,
    ROLE_SERVER,
    ROOT,
    TF_REQUIREMENT,
    BuildLog,
    ImageInfo,
    ImageInputs,
    build_error,
    build_image,
    check_image,
    expected_tag,
    image_tag,
    read_inputs,
    require_image,
)
from reprokit.run.containers.offline import BaseImage

INPUTS = ImageInputs(
    dockerfile=b"FROM x\n",
    role_server=b"print('serve')\n",
    base=REGISTRY_BASE,
    base_id="sha256:" + "0" * 64,
    wheel_manifest=b"",
)


def test_the_tag_names_the_tensorflow_version_and_12_hex_of_the_inputs() -> None:
    assert re.fullmatch(r"reprokit/tf-cluster:tf2\.21\.0-[0-9a-f]{12}", image_tag(INPUTS))
    assert image_tag(INPUTS) == image_tag(dataclasses.replace(INPUTS))


@pytest.mark.parametrize(
    "change",
    [
        {"dockerfile": b"FROM y\n"},
        {"role_server": b"print('serve!')\n"},
        {"base": OFFLINE_BASE},
        {"base_id": "sha256:" + "1" * 64},
        {"wheel_manifest": b'{"wheels": {}}'},
        {"tf_requirement": "tensorflow==2.21.0"},
    ],
)
def test_changing_any_input_changes_the_tag(change: dict[str, object]) -> None:
    assert image_tag(INPUTS) != image_tag(dataclasses.replace(INPUTS, **change))  # type: ignore[arg-type]


def test_bytes_moved_from_one_input_to_the_next_change_the_tag() -> None:
    """Each input is length-prefixed, so 'ab' + 'c' and 'a' + 'bc' hash differently."""
    one = dataclasses.replace(INPUTS, dockerfile=b"ab", role_server=b"c")
    other = dataclasses.replace(INPUTS, dockerfile=b"a", role_server=b"bc")
    assert image_tag(one) != image_tag(other)


def make_context(root: Path, dockerfile: str | None = None) -> Path:
    """A build context like the repository's: the real Dockerfile (or ``dockerfile``)."""
    (root / "docker").mkdir(parents=True)
    (root / ROLE_SERVER).parent.mkdir(parents=True)
    text = dockerfile if dockerfile is not None else (ROOT / "docker/Dockerfile").read_text()
    (root / "docker/Dockerfile").write_text(text)
    shutil.copy(ROOT / ROLE_SERVER, root / ROLE_SERVER)
    shutil.copy(ROOT / ".dockerignore", root / ".dockerignore")
    return root


def test_inputs_are_read_from_disk_and_the_wheel_manifest_is_optional(tmp_path: Path) -> None:
    root = make_context(tmp_path)
    inputs = read_inputs(OFFLINE_BASE, "sha256:1", root)
    assert (ROOT / "docker/Dockerfile").read_bytes() == inputs.dockerfile
    assert (b"", TF_REQUIREMENT) == (inputs.wheel_manifest, inputs.tf_requirement)
    (root / "wheels").mkdir()
    (root / "wheels/manifest.json").write_text("{}")
    assert b"{}" == read_inputs(OFFLINE_BASE, "sha256:1", root).wheel_manifest


def test_the_dockerfile_defaults_match_the_kit() -> None:
    """One Dockerfile for both bases: the registry one by default, the kit's requirement."""
    text = (ROOT / "docker/Dockerfile").read_text()
    assert f"ARG BASE_IMAGE={REGISTRY_BASE}\n" in text
    assert 2 == text.count(f"ARG TF_REQUIREMENT={TF_REQUIREMENT}\n")
    assert f"COPY {ROLE_SERVER} /opt/reprokit/role_server.py\n" in text


def test_the_build_context_holds_only_what_the_image_needs(tmp_path: Path) -> None:
    """.dockerignore, as the SDK applies it, keeps docker/, the role server and the wheels."""
    root = make_context(tmp_path)
    for name in ["reprokit/run/containers/image.py", "wheels/a.whl", "wheels/.download/b.whl", "runs/1/ps.log"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    patterns = [line.strip() for line in (root / ".dockerignore").read_text().splitlines()]
    patterns = [p for p in patterns if p and not p.startswith("#")]
    sent = docker.utils.exclude_paths(str(root), patterns, "docker/Dockerfile")
    files = {path for path in sent if (root / path).is_file()} - {".dockerignore"}
    assert {"docker/Dockerfile", ROLE_SERVER, "wheels/a.whl"} == files


FAILED_RUN = "The command '/bin/sh -c echo about to fail && exit 3' returned a non-zero code: 3"
STREAM: list[dict[str, Any]] = [
    {"stream": "Step 1/3 : ARG BASE_IMAGE\n"},
    {"stream": "Step 2/3 : FROM ${BASE_IMAGE}\n"},
    {"stream": " ---> 04b03778403b\n"},
    {"stream": "Step 3/3 : RUN echo about to fail && exit 3\n"},
    {"stream": " ---> Running in 1d107375a8b2\n"},
    {"stream": "about to "},
    {"stream": "fail\n\x1b[91mon stderr\n\x1b[0m"},
    {
        "error": FAILED_RUN,
        "errorDetail": {"code": 3, "message": "The command ... returned a non-zero code: 3"},
    },
]


def test_the_build_log_echoes_whole_lines_and_keeps_the_failing_step() -> None:
    """Chunks split mid-line are joined; colour codes go; the error detail is kept."""
    echoed: list[str] = []
    log = BuildLog(echoed.append)
    for chunk in STREAM:
        log.feed(chunk)
    log.finish()
    assert "Step 3/3 : RUN echo about to fail && exit 3" == log.step
    assert "The command ... returned a non-zero code: 3" == log.error
    tail = [" ---> Running in 1d107375a8b2", "about to fail", "on stderr"]
    assert tail + ["ERROR: " + log.error] == log.step_lines
    assert "Step 1/3 : ARG BASE_IMAGE" == echoed[0] and 8 == len(echoed)


def test_pull_progress_bars_are_not_echoed() -> None:
    echoed: list[str] = []
    log = BuildLog(echoed.append)
    log.feed({"status": "Pulling fs layer", "id": "abc"})
    log.feed({"status": "Downloading", "progress": "[==>   ]", "id": "abc"})
    assert ["Pulling fs layer abc"] == echoed


def test_a_build_error_names_the_step_and_shows_its_output() -> None:
    log = BuildLog()
    for chunk in STREAM:
        log.feed(chunk)
    error = build_error("reprokit/tf-cluster:tf2.21.0-0123456789ab", log)
    assert "failed at Step 3/3 : RUN echo about to fail && exit 3: The command" in error.message
    assert "\n    about to fail\n    on stderr" in error.message
    assert "invoke download-wheels" in error.hint


# -- with the real engine --------------------------------------------------------------------


@pytest.mark.docker
def test_tensorflow_2_21_imports_in_the_offline_image_and_ifconfig_is_there(
    docker_client: docker.DockerClient,
    offline_image: ImageInfo,
    no_leftover_containers: None,
) -> None:
    check = check_image(offline_image.tag, docker_client)
    assert ("2.21.0", "/usr/sbin/ifconfig") == (check.tf_version, check.ifconfig)
    assert (OFFLINE_BASE, "2.21.0") == (offline_image.base, offline_image.tf_version)
    assert expected_tag(OFFLINE_BASE, docker_client) == offline_image.tag


@pytest.mark.docker
def test_a_second_build_with_the_same_inputs_builds_nothing(
    docker_client: docker.DockerClient,
    offline_image: ImageInfo,
    no_leftover_containers: None,
) -> None:
    echoed: list[str] = []
    again = build_image(OFFLINE_BASE, echo=echoed.append, client=docker_client)
    assert (False, offline_image.tag, offline_image.id) == (again.built, again.tag, again.id)
    assert [] == echoed


@pytest.mark.docker
def test_a_base_that_has_tensorflow_needs_no_wheels(
    docker_client: docker.DockerClient,
    offline_image: ImageInfo,
    tmp_path: Path,
    no_leftover_containers: None,
) -> None:
    """The registry path, played by the offline image: no wheels/ in the context, no pip."""
    root = make_context(tmp_path)
    with (root / ROLE_SERVER).open("a") as role_server:
        role_server.write(f"# {uuid.uuid4()}: a tag of its own, untouched by concurrent runs\n")
    derived = build_image(offline_image.tag, root=root, client=docker_client)
    try:
        source = docker_client.containers.run(
            derived.tag, ["cat", "/opt/reprokit/tensorflow-source.txt"], remove=True
        )
        assert b"tensorflow: from the base image\n" == source
        assert (True, "2.21.0") == (derived.built, derived.tf_version)
    finally:
        docker_client.images.remove(derived.tag)  # a test artefact, not the kit's cache


@pytest.mark.docker
def test_a_failing_step_is_reported_with_its_output_and_leaves_no_container(
    docker_client: docker.DockerClient,
    offline_base: BaseImage,
    tmp_path: Path,
    no_leftover_containers: None,
) -> None:
    dockerfile = "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo about to fail && exit 3\n"
    root = make_context(tmp_path, dockerfile)
    echoed: list[str] = []
    with pytest.raises(DockerError) as caught:
        build_image(offline_base.tag, echo=echoed.append, root=root, client=docker_client)
    assert "failed at Step 3/6 : RUN echo about to fail && exit 3" in caught.value.message
    assert "returned a non-zero code: 3" in caught.value.message
    assert "\n    about to fail\n" in caught.value.message
    assert "Step 1/6 : ARG BASE_IMAGE" == echoed[0]  # 3 steps + the kit's 3 LABELs


@pytest.mark.docker
def test_a_base_that_is_absent_and_cannot_be_pulled_says_how_to_build_one(
    docker_client: docker.DockerClient,
) -> None:
    with pytest.raises(DockerError) as caught:
        build_image("reprokit/absent-base:none", client=docker_client)
    assert "base image reprokit/absent-base:none is not here" in caught.value.message
    assert "invoke build-base-image" in caught.value.hint


@pytest.mark.docker
def test_requiring_a_missing_image_names_the_task_that_builds_it(
    docker_client: docker.DockerClient,
) -> None:
    with pytest.raises(DockerError) as caught:
        require_image("reprokit/tf-cluster:absent", docker_client)
    assert (
        "image reprokit/tf-cluster:absent missing: run `invoke build-image`" == caught.value.message
    )
