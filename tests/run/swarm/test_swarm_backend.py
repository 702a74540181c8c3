"""The Swarm backend on a real single-node swarm: a reproduction as stacks, the stack file
deployed by hand, a killed worker task, Ctrl-C, leftovers of a killed kit, the image check."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

import docker
from reprokit.experiment import reproduce, write_stack
from reprokit.options import Request, RunPlan, fault_plan
from reprokit.run.containers.engine import OWNER_LABEL, RUN_LABEL
from reprokit.run.containers.owners import boot_id
from reprokit.run.registry import run_inputs
from reprokit.run.roles import RoleSpec
from reprokit.run.swarm.backend import SwarmBackend
from reprokit.run.swarm.nodes import node_verdicts
from reprokit.run.swarm.stack import STACK_LABEL, StackSpec
from reprokit.settings import Settings
from tests.support.kit import (
    FAULT_STEPS,
    STEPS,
    KitInputs,
    kit_options,
    kit_settings,
    kit_watchdog,
)
from tests.support.processes import wait_for

pytestmark = pytest.mark.docker


@pytest.fixture
def settings(tmp_path: Path, kit_inputs: KitInputs) -> Settings:
    return kit_settings(tmp_path / "runs", kit_inputs)


def stacks_of(client: docker.DockerClient, run_id: str) -> list[str]:
    """What `docker stack ls`, `docker service ls` and `docker network ls` show of a run."""
    label = {"label": f"{RUN_LABEL}={run_id}"}
    return [f"service {s.name}" for s in client.services.list(filters=label)] + \
        [f"network {n.name}" for n in client.networks.list(filters=label)]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_short_reproduction_as_swarm_stacks_passes_and_leaves_nothing(settings, swarm, kit_image):
    """Standalone, then 1 ps + 2 workers + client as services of one stack: PASS by the rules;
    each run folder holds the stack file it deployed; no service or network is left."""
    backend = SwarmBackend(run_inputs(settings), kit_image.tag, client=swarm,
                           watchdog=settings.watchdog)
    run_id = f"sw-{uuid.uuid4().hex[:6]}"
    result = reproduce(settings, RunPlan(kit_options(STEPS, 2, run_id=run_id), backend),
                       lambda line: None)
    assert result.passed, result.error
    for mode in ("standalone", "cluster"):
        assert (result.run_dir / f"stack-{mode}.yml").is_file()
    services = yaml.safe_load((result.run_dir / "stack-cluster.yml").read_text())["services"]
    assert ["tf_paramserver", "tf_worker_1", "tf_worker_2", "tf_client"] == list(services)
    assert "--wait-for" in services["tf_client"]["command"]
    codes = result.results.modes["cluster"].outcome.exit_codes
    assert 0 == codes["client"]
    # The servers were stopped by the teardown, which removes their services: Swarm keeps no exit code.
    assert {"ps": None, "worker0": None, "worker1": None} == {r: codes[r] for r in ("ps", "worker0", "worker1")}
    assert [] == stacks_of(swarm, run_id)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("program, services", [
    ("tf2-mirrored", ["tf_worker_2", "tf_worker_1"]),
    ("tf2-ps", ["tf_paramserver", "tf_worker_1", "tf_worker_2", "tf_client"])])
def test_each_tf2_program_trains_as_a_stack_whose_services_carry_tf_config(settings, swarm, kit_image, program,
                                                                         services):
    backend = SwarmBackend(run_inputs(settings), kit_image.tag, client=swarm, watchdog=settings.watchdog)
    run_id = f"sw-{uuid.uuid4().hex[:6]}"
    result = reproduce(settings, RunPlan(kit_options(STEPS, 2, run_id=run_id,
                                         modes=("cluster",), program=program), backend), lambda line: None)
    assert result.passed, result.error
    found = yaml.safe_load((result.run_dir / "stack-cluster.yml").read_text())["services"]
    assert services == list(found)
    assert all("TF_CONFIG" in service["environment"] for service in found.values())
    assert [] == stacks_of(swarm, run_id)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_tf2_ps_worker_killed_by_a_fault_is_restarted_by_the_swarm(settings, swarm, kit_image):
    """`--backend swarm --program tf2-ps --workers 1 --fault kill:worker0@10`: the kit kills the only
    worker's task, and the coordinator waits for it; the swarm starts its next task by the stack's
    restart policy, and the coordinator finishes every planned step; each task's lines go to a log
    of its own; nothing is left. One worker, so that the restart is what the run waits for."""
    run_id = f"sw-{uuid.uuid4().hex[:6]}"
    options = kit_options(FAULT_STEPS, 1, run_id=run_id, modes=("cluster",), program="tf2-ps")
    backend = SwarmBackend(run_inputs(settings), kit_image.tag, client=swarm, watchdog=settings.watchdog,
                           faults=fault_plan(settings, options, ["kill:worker0@10"], "swarm"))
    result = reproduce(settings, RunPlan(options, backend), lambda line: None)
    assert result.passed, result.error
    policy = yaml.safe_load((result.run_dir / "stack-cluster.yml").read_text())["services"]["tf_worker_1"]
    assert "on-failure" == policy["deploy"]["restart_policy"]["condition"]
    recovery = result.results.modes["cluster"].outcome.recovery
    assert ["fault", "exited", "restarted", "serving"] == [e["what"] for e in recovery["events"]]
    assert "exit code 137" == recovery["events"][1]["detail"]
    assert "step 50, loss = " in (result.run_dir / "client.log").read_text()
    first, second = (result.run_dir / "worker0.log").read_text(), (result.run_dir / "worker0.2.log").read_text()
    assert 1 == first.count("serving /job:worker/task:0") == second.count("serving /job:worker/task:0")
    assert "task 2 of service" in second.split("\n")[0]
    assert [] == stacks_of(swarm, run_id)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_stack_file_is_deployed_by_hand_and_trains(settings, swarm, kit_image, kit_inputs):
    """`invoke stack-file`'s file, deployed with `docker stack deploy`: the client's task trains
    to the last step and exits 0; `docker stack rm` removes it all."""
    options, writer = Request(steps=STEPS, source="synthetic").stack_plan(settings, kit_image.tag)
    path = write_stack(settings, options, writer, lambda line: None)
    stack = f"byhand-{uuid.uuid4().hex[:6]}"
    subprocess.run(["docker", "stack", "deploy", "--resolve-image", "never", "-c", str(path), stack], check=True,
                   capture_output=True)
    try:
        client = swarm.services.get(f"{stack}_tf_client")

        def ended() -> dict:
            tasks = client.tasks()
            return next((t for t in tasks if t["Status"]["State"] in ("complete", "failed", "rejected")), {})

        task = wait_for(ended, 900, "the client's task never ended")
        logs = b"".join(client.logs(stdout=True, stderr=True)).decode(errors="replace")
        assert ("complete", 0) == (task["Status"]["State"], task["Status"]["ContainerStatus"]["ExitCode"]), logs[-3000:]
        assert f"step {STEPS - 1}, loss = " in logs
    finally:
        subprocess.run(["docker", "stack", "rm", stack], capture_output=True)
    label = {"label": f"{STACK_LABEL}={stack}"}
    wait_for(lambda: not swarm.services.list(filters=label) and not swarm.networks.list(filters=label), 120,
             f"stack {stack} was not removed")


def _server(code: str, address: str) -> RoleSpec:
    return RoleSpec("ps" if "paramserver" in address else "worker0", ["python3", "-u", "-c", code], "0", {}, address)


LISTEN = "import socket, time; s = socket.create_server(('', 2222)); print('serving /job:x/task:0', flush=True); " \
         "time.sleep(300)"


def test_a_killed_worker_task_fails_the_run_naming_it_and_leaves_nothing(settings, swarm, kit_image, tmp_path):
    """Its container killed (SIGKILL) while the client runs: not restarted; the run fails naming it."""
    backend = SwarmBackend(run_inputs(settings), kit_image.tag, client=swarm, watchdog=kit_watchdog(probe_s=120))
    run_dir = tmp_path / f"kill-{uuid.uuid4().hex[:6]}"
    run_dir.mkdir()
    roles = [_server(LISTEN, "tf_paramserver:2222"), _server(LISTEN, "tf_worker_1:2222"),
             RoleSpec("client", ["python3", "-u", "-c", "print('training', flush=True); import time; time.sleep(300)"],
                      "", {})]

    def kill_the_worker() -> None:
        wait_for(lambda: "training" in (run_dir / "client.log").read_text() if (run_dir / "client.log").exists()
                 else False, 180, "the client never trained")
        for container in swarm.containers.list(filters={"label": "reprokit.role=worker0"}):
            if run_dir.name in container.labels.get(RUN_LABEL, ""):
                container.kill()

    killer = threading.Thread(target=kill_the_worker, daemon=True)
    killer.start()
    outcome = backend.run(run_dir, roles, "client", None)
    killer.join(timeout=10)
    assert not outcome.ok
    assert outcome.message.startswith("the worker0 role (service reprokit-")
    assert "exited with code 137 (killed by SIGKILL) while the client was running" in outcome.message
    assert [] == stacks_of(swarm, run_dir.name)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_removes_the_whole_stack(settings, swarm, kit_image, tmp_path, signum):
    """Ctrl-C or a `kill` of the kit mid-run becomes KeyboardInterrupt after the stack is removed."""
    backend = SwarmBackend(run_inputs(settings), kit_image.tag, client=swarm, watchdog=kit_watchdog(probe_s=120))
    run_dir = tmp_path / f"term-{uuid.uuid4().hex[:6]}"
    run_dir.mkdir()
    roles = [_server(LISTEN, "tf_paramserver:2222"),
             RoleSpec("client", ["python3", "-u", "-c", "print('training', flush=True); import time; time.sleep(300)"],
                      "", {})]

    def term_once_training() -> None:
        wait_for(lambda: "training" in (run_dir / "client.log").read_text() if (run_dir / "client.log").exists()
                 else False, 180, "the client never trained")
        os.kill(os.getpid(), signum)

    threading.Thread(target=term_once_training, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        backend.run(run_dir, roles, "client", None)
    assert [] == stacks_of(swarm, run_dir.name)


def test_a_stack_left_by_a_killed_kit_is_removed_by_the_next_backend(settings, swarm, kit_image):
    """A service whose owner process is gone, in a stack of its own: swept when a backend starts."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stack = f"reprokit-left-{uuid.uuid4().hex[:6]}"
    owner = f"{socket.gethostname()}/{boot_id()}/{dead.pid}/1"
    swarm.services.create(kit_image.tag, ["sleep", "300"], name=f"{stack}_tf_paramserver",
                          labels={STACK_LABEL: stack, RUN_LABEL: "left", OWNER_LABEL: owner})
    backend = SwarmBackend(run_inputs(settings), kit_image.tag, client=swarm,
                           watchdog=settings.watchdog)
    assert f"stack {stack}" in backend.facts()["leftovers_removed"]
    assert [] == swarm.services.list(filters={"label": f"{STACK_LABEL}={stack}"})


def test_a_node_without_the_image_is_named_before_anything_is_deployed(swarm, kit_image, tmp_path):
    """The check service: this node runs the kit's image, and rejects an image it does not have."""
    spec = StackSpec(kit_image.tag, "check", "owner", {str(tmp_path): {"bind": str(tmp_path), "mode": "ro"}})
    host = swarm.info()["Name"]
    assert {host: ""} == node_verdicts(swarm, kit_image.tag, spec)
    missing = node_verdicts(swarm, "reprokit/no-such-image:0", spec)
    assert "No such image" in missing[host] or "reprokit/no-such-image" in missing[host], missing


def test_a_backend_on_an_engine_that_is_no_swarm_manager_says_how_to_make_one(settings, docker_client, monkeypatch):
    monkeypatch.setattr(docker_client, "info", lambda: {"Swarm": {"LocalNodeState": "inactive"}})
    with pytest.raises(Exception) as caught:
        SwarmBackend(run_inputs(settings), "any", client=docker_client, watchdog=kit_watchdog())
    assert "not part of a swarm" in str(caught.value) and "docker swarm init" in str(caught.value)
    assert time.monotonic() > 0
