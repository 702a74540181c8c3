"""Every task exits 0 only when what it ran succeeded, and every bad option, file or state is one
`error:` line that names the problem and the fix, never a traceback, and leaves no run folder.

Each test runs `python -m invoke` as a person would, in a scratch copy of the kit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reprokit.run import netns
from tests.support.cli import error_line, invoke
from tests.support.processes import free_port

PS = ["--ps", "127.0.0.1:2222", "--workers", "127.0.0.1:2223,127.0.0.1:2224"]


@pytest.mark.parametrize("args, says", [
    (["worker", "--index", "5", *PS], "error: the cluster has no worker task 5: its worker tasks are 0..1"),
    (["worker", "--index", "one", *PS], "error: --index 'one' is not a whole number"),
    (["worker", "--cluster", "missing.json"], "error: missing.json: cannot read a cluster description"),
    (["worker", "--ps", "tf_paramserver", "--workers", "w:1"], "error: --ps: 'tf_paramserver' is not host:port"),
    (["ps"], "error: no cluster given"),
    (["sweep", "--workers", "a"], "error: --workers 'a' is not a whole number"),
    (["sweep", "--workers", ","], "error: --workers ',' names no worker count"),
    (["bench", "--repetitions", "0"], "error: --repetitions 0 is less than 1"),
    (["bench", "--steps", "30"], "error: --steps 30 is less than 31"),
    (["sweep", "--steps", "10"], "error: --steps 10 is less than 21"),
    (["sweep", "--tuning", "fast"], "error: unknown tuning profile 'fast'"),
    (["bench", "--loss-steps", "x"], "error: --loss-steps 'x' is not a whole number"),
    (["reproduce", "--workers", "0"], "error: --workers 0 is less than 1"),
    (["reproduce", "--steps", "ten"], "error: --steps 'ten' is not a whole number"),
    (["reproduce", "--isolation", "container"], "error: unknown --isolation 'container'"),
    (["reproduce", "--backend", "kubernetes"], "error: unknown --backend 'kubernetes'"),
    (["reproduce", "--layout", "diagonal"], "error: unknown --layout 'diagonal'"),
    (["reproduce", "--cpus", "gpu=0"], "error: --cpus names role 'gpu', which this run has not"),
    (["reproduce", "--backend", "docker", "--tuning", "tuned"], "error: --tuning tuned runs the ps inside"),
    (["standalone", "--steps", "-1"], "error: --steps -1 is less than 1"),
    (["data", "--records", "many"], "error: --records 'many' is not a whole number"),
    (["compare-logs"], "error: no runs under"),
    (["report", "--run", "nosuchrun"], "error: no run folder 'nosuchrun'"),
])
def test_a_bad_option_is_one_error_line_and_exit_1(cli_kit: Path, args: list[str], says: str):
    """The message names the option and what was given; nothing is made."""
    result = invoke(cli_kit, *args)
    assert 1 == result.returncode
    assert error_line(result).startswith(says), result.stderr
    assert not (cli_kit / "runs").exists() or [] == list((cli_kit / "runs").iterdir())


@pytest.mark.parametrize("key, value, says", [
    ("stall_factr", 3, "error: invoke.yaml: unknown setting under `reprokit:`: stall_factr"),
    ("steps", "a thousand", "error: invoke.yaml: reprokit.steps = 'a thousand' is not a int"),
    ("probe_timeout_s", True, "error: invoke.yaml: reprokit.probe_timeout_s = True is not a float"),
])
def test_a_bad_invoke_yaml_is_refused_naming_the_key(cli_kit: Path, key: str, value: object, says: str):
    """A misspelt or mistyped setting must not leave the default silently in force."""
    config = yaml.safe_load((cli_kit / "invoke.yaml").read_text())
    config["reprokit"][key] = value
    (cli_kit / "invoke.yaml").write_text(yaml.safe_dump(config))
    result = invoke(cli_kit, "verify")
    assert 1 == result.returncode
    text = error_line(result)
    assert text.startswith(says), result.stderr
    if key == "stall_factr":
        assert "the settings are: upstream_dir, patches_dir" in text


def test_a_client_whose_ps_is_not_there_says_to_start_it(cli_kit: Path):
    """Nothing listens at the ps address (a loopback port nobody holds): start it first."""
    port = free_port()
    result = invoke(cli_kit, "client", "--ps", f"127.0.0.1:{port}", "--workers", f"127.0.0.1:{free_port()}")
    assert 1 == result.returncode
    text = error_line(result)
    assert text.startswith(f"error: the ps at 127.0.0.1:{port} is not reachable")
    assert "start it first with `invoke ps" in text


@pytest.mark.parametrize("task", [["build-image"], ["reproduce", "--backend", "docker", "--source", "synthetic"]])
def test_no_docker_engine_is_an_error_that_says_how_to_start_one(cli_kit: Path, task: list[str], tmp_path: Path):
    """DOCKER_HOST names a socket that does not exist: the same message for every Docker task."""
    socket_path = tmp_path / "no-engine.sock"
    result = invoke(cli_kit, *task, env={"DOCKER_HOST": f"unix://{socket_path}"})
    assert 1 == result.returncode
    text = error_line(result)
    assert text.startswith(f"error: no Docker engine: the socket {socket_path} does not exist")
    assert "dockerd" in text and "--backend local" in text


# Inside a private network namespace, a listener holds the ps port, then `invoke ps` runs.
HELD_PORT = """
import socket, subprocess, sys
from reprokit.run.netns import bring_loopback_up
bring_loopback_up()
holder = socket.socket()
holder.bind(("0.0.0.0", 2222))
holder.listen()
done = subprocess.run([sys.executable, "-m", "invoke", "ps", *sys.argv[1:]], capture_output=True, text=True)
sys.stdout.write(done.stdout)
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
"""


@pytest.mark.skipif(not netns.isolation_available()[0], reason="needs a private network namespace")
def test_a_server_task_that_fails_exits_with_an_error(cli_kit: Path):
    """`invoke ps` whose server cannot start (its port is taken) exits non-zero, not 0. It runs in a
    network namespace of its own, so that no server of the test ever listens on this machine."""
    argv = [*netns.unshare_prefix(), sys.executable, "-c", HELD_PORT, *PS]
    result = subprocess.run(argv, cwd=cli_kit, capture_output=True, text=True, timeout=180,
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(cli_kit)})
    assert 1 == result.returncode, result.stdout + result.stderr
    assert error_line(result).startswith("error: the ps server exited with code ")
