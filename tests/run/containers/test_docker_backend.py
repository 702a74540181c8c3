"""The Docker backend: each role a container on a bridge network of its own, always removed.

The first tests check the pure builders (no engine). The ones marked `docker` use the real
engine and the kit's image: quick ones with stand-in roles (a server that dies, one that never
listens, a SIGTERM), then a short real reproduction, and a worker killed in the middle of one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import docker
from reprokit.errors import DockerError
from reprokit.experiment import reproduce
from reprokit.options import RunPlan, fault_plan
from reprokit.run.containers.backend import DockerBackend
from reprokit.run.containers.engine import OWNER_LABEL, RUN_LABEL
from reprokit.run.containers.handle import ContainerHandle
from reprokit.run.containers.image import ImageInfo, default_image
from reprokit.run.containers.mounts import same_path_mounts
from reprokit.run.containers.owners import boot_id, owner_token
from reprokit.run.containers.specs import (
    PROBE_OK,
    Placement,
    container_kwargs,
    docker_cluster,
    docker_run_argv,
    local_time,
    log_lines,
    network_name,
    probe_argv,
)
from reprokit.run.registry import run_inputs
from reprokit.run.roles import RoleSpec, Trainer, TrainingArgs, cluster_roles
from reprokit.settings import Settings, from_mapping
from tests.support import REPO
from tests.support.engine import EngineProxy
from tests.support.kit import FAULT_STEPS, kit_options, kit_watchdog
from tests.support.processes import wait_for

STEPS, RECORDS = 21, 200  # steps 0..20: three step lines, about a minute per mode on 2 cores
PLACE = Placement("reprokit/tf-cluster:tf2.21.0-0123456789ab", "reprokit-run1-abc123", "abc123", "run1",
                  "host:42", same_path_mounts([Path("/src"), Path("/data")], [Path("/runs/run1")]), "1000:1000")


def _ps() -> RoleSpec:
    return cluster_roles(docker_cluster(2), TrainingArgs(STEPS, "/data", "/runs/run1/train"),
                         Trainer("python3", "/src", "cifar10_cluster_train.py"),
                         {"ps": "0", "worker0": "0", "worker1": "1", "client": "0,1"},
                         role_server="/opt/reprokit/role_server.py")[0]


# --- pure builders ---------------------------------------------------------------------------

def test_the_cluster_is_the_articles_hosts_each_on_its_own_port_2222():
    """The ClusterSpec names containers, not IPs: every server listens on its own 2222."""
    assert {"ps": ["tf_paramserver:2222"], "worker": ["tf_worker_1:2222", "tf_worker_2:2222"]} == \
        docker_cluster(2).spec


def test_a_container_has_the_articles_hostname_a_unique_name_and_the_roles_cpuset():
    """-h tf_paramserver and --cpuset-cpus as in the article; the name adds the run's token."""
    kwargs = container_kwargs(_ps(), PLACE)
    assert ("tf_paramserver-abc123", "tf_paramserver", "0") == \
        (kwargs["name"], kwargs["hostname"], kwargs["cpuset_cpus"])
    assert {PLACE.network: {"Aliases": ["tf_paramserver"]}} == kwargs["networking_config"]
    assert PLACE.network == kwargs["network"]


def test_a_container_publishes_no_port_and_is_removed_by_the_kit_not_by_docker():
    """No `ports`: the servers are reachable on the run's bridge only; logs outlive the exit."""
    kwargs = container_kwargs(_ps(), PLACE)
    assert "ports" not in kwargs and "publish_all_ports" not in kwargs
    assert (False, True) == (kwargs["auto_remove"], kwargs["init"])


def test_folders_are_mounted_at_the_same_path_inputs_read_only():
    """The role's argv names host paths, so each folder appears at that very path inside."""
    assert {"/data": {"bind": "/data", "mode": "ro"}, "/runs/run1": {"bind": "/runs/run1", "mode": "rw"},
            "/src": {"bind": "/src", "mode": "ro"}} == container_kwargs(_ps(), PLACE)["volumes"]


def test_a_folder_given_as_input_and_output_is_mounted_once_read_write():
    assert {"/x": {"bind": "/x", "mode": "rw"}} == same_path_mounts([Path("/x")], [Path("/x")])


def test_labels_name_the_run_the_owner_and_the_role():
    """`reprokit.run` finds a run's leftovers; the owner tells a killed run from a live one."""
    assert {RUN_LABEL: "run1", OWNER_LABEL: "host:42", "reprokit.role": "ps"} == \
        container_kwargs(_ps(), PLACE)["labels"]


def test_the_role_argv_and_environment_are_passed_unchanged():
    role = _ps()
    kwargs = container_kwargs(role, PLACE)
    assert (role.argv, role.env) == (kwargs["command"], kwargs["environment"])


def test_a_role_without_cpus_gets_no_cpuset():
    role = RoleSpec("client", ["python3", "x.py"], "")
    assert "cpuset_cpus" not in container_kwargs(role, PLACE)


def test_the_docker_run_line_reads_like_the_articles_command():
    """What each role's log starts with: the command a person would type."""
    line = " ".join(docker_run_argv(container_kwargs(_ps(), PLACE)))
    assert "--cpuset-cpus 0 " in line and "-h tf_paramserver " in line
    assert "-v /src:/src:ro " in line and "-v /runs/run1:/runs/run1 " in line
    assert line.endswith("-d reprokit/tf-cluster:tf2.21.0-0123456789ab " + " ".join(_ps().argv))
    assert " -p " not in line


def test_a_container_is_hardened_and_its_docker_run_line_says_so():
    """No capabilities, no new privileges, a read-only root with a tmpfs /tmp, a pids limit."""
    kwargs = container_kwargs(_ps(), PLACE)
    assert (["ALL"], ["no-new-privileges"], True, 2048) == \
        (kwargs["cap_drop"], kwargs["security_opt"], kwargs["read_only"], kwargs["pids_limit"])
    assert {"/tmp"} == set(kwargs["tmpfs"])
    line = " ".join(docker_run_argv(kwargs))
    for flag in ("--cap-drop=ALL", "--security-opt=no-new-privileges", "--read-only", "--tmpfs=/tmp:",
                 "--pids-limit=2048"):
        assert f" {flag}" in line


def test_network_names_are_made_safe_for_docker():
    assert "reprokit-my-run-1-abc123" == network_name("my run/1", "abc123")


def test_the_probe_connects_to_the_roles_own_address():
    argv = probe_argv("python3", "tf_worker_1:2222")
    assert (["python3", "-c"], ["tf_worker_1", "2222"]) == (argv[:2], argv[3:])


def test_the_probe_says_reachable_only_for_a_listening_port():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        served = subprocess.run(probe_argv(sys.executable, f"127.0.0.1:{port}"), capture_output=True, text=True)
    closed = subprocess.run(probe_argv(sys.executable, f"127.0.0.1:{port}"), capture_output=True, text=True)
    assert (0, PROBE_OK) == (served.returncode, served.stdout.strip())
    assert 1 == closed.returncode and PROBE_OK not in closed.stdout


class _ExecEndsWith:
    """A container whose probe exec ends as given: docker reports (None, b"") for an exec killed
    because its container stopped meanwhile."""

    def __init__(self, code: int | None, output: bytes) -> None:
        self.result = (code, output)

    def exec_run(self, argv: list[str]) -> tuple[int | None, bytes]:
        return self.result


@pytest.mark.parametrize("code, output", [(None, b""), (0, b""), (137, b"")])
def test_a_probe_killed_with_its_container_is_not_reachable(code, output):
    handle = ContainerHandle.__new__(ContainerHandle)
    handle.spec, handle.python = _ps(), "python3"
    handle.container = _ExecEndsWith(code, output)  # type: ignore[assignment]
    assert "no output" in handle.unreachable()
    handle.container = _ExecEndsWith(0, PROBE_OK.encode() + b"\n")  # type: ignore[assignment]
    assert "" == handle.unreachable()


def test_the_engines_utc_nanosecond_time_becomes_local_microseconds():
    """Same shape as the local backend's prefix: 2026-12-02T10:15:00.123456, in local time."""
    stamp = local_time("2026-12-02T10:15:00.123456789Z")
    assert 26 == len(stamp) and stamp.endswith(":00.123456")
    assert local_time("2026-12-02T10:15:00Z").endswith(":00.000000")


def test_a_log_frame_becomes_prefixed_lines():
    lines = log_lines(b"2026-12-02T10:15:00.5Z step 0, loss = 4.68\n", "now")
    assert [f"{local_time('2026-12-02T10:15:00.5Z')} | step 0, loss = 4.68\n"] == lines


def test_a_log_frame_without_a_time_keeps_its_text():
    assert ["now | no time here\n"] == log_lines(b"no time here\n", "now")


# --- with the engine ---------------------------------------------------------------------------

def _config(tmp: Path) -> dict:
    config = dict(yaml.safe_load((REPO / "invoke.yaml").read_text())["reprokit"])
    return {**config, "runs_dir": str(tmp / "runs"), "data_dir": str(tmp / "data"),
            "sources_dir": str(tmp / "patched"), "synthetic_records": RECORDS, "backend": "docker",
            "update_check": False}


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return from_mapping(_config(tmp_path), root=REPO)


@pytest.fixture()
def backend(settings: Settings, kit_image: ImageInfo, docker_client: docker.DockerClient) -> Iterator[DockerBackend]:
    made = DockerBackend(run_inputs(settings), kit_image.tag, client=docker_client,
                         watchdog=settings.watchdog)
    yield made
    assert [] == made.teardown()


def labelled(client: docker.DockerClient, run_id: str) -> list[str]:
    """What `docker ps -a` and `docker network ls` show with reprokit.run=<run_id>."""
    filters = {"label": f"{RUN_LABEL}={run_id}"}
    return [f"container {c.name}" for c in client.containers.list(all=True, filters=filters)] + \
        [f"network {n.name}" for n in client.networks.list(filters=filters)]


def _run_dir(settings: Settings) -> Path:
    path = settings.runs_dir / f"dk-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    return path.resolve()


def _server(name: str, code: str, address: str = "tf_paramserver:2222") -> RoleSpec:
    return RoleSpec(name, ["python3", "-u", "-c", code], "0", {}, address)


@pytest.mark.docker
def test_the_default_image_is_the_one_build_image_makes(kit_image: ImageInfo, docker_client):
    """With no REPROKIT_IMAGE, the backend picks the tag of the base that is here."""
    if os.environ.get("REPROKIT_IMAGE"):
        pytest.skip("REPROKIT_IMAGE names the image")
    assert kit_image.tag == default_image(docker_client)


@pytest.mark.docker
def test_a_missing_image_says_to_build_it(settings: Settings, docker_client):
    with pytest.raises(DockerError) as caught:
        DockerBackend(run_inputs(settings), "reprokit/tf-cluster:tf2.21.0-000000000000", client=docker_client,
                      watchdog=settings.watchdog)
    assert "invoke build-image" in str(caught.value)


@pytest.mark.docker
def test_facts_name_the_image_and_say_nothing_is_exposed(backend: DockerBackend, kit_image: ImageInfo):
    facts = backend.facts()
    exposure = backend.exposure(backend.cluster(2))
    assert ("docker", kit_image.tag, kit_image.id, exposure.where) == \
        (facts["backend"], facts["image"], facts["image_id"], facts["exposed"])
    assert not exposure.beyond_run and "no port published" in exposure.where


@pytest.mark.docker
def test_a_server_that_dies_early_fails_the_run_with_its_log(backend: DockerBackend, settings, docker_client,
                                                             no_leftover_containers):
    """The message names the role and its container and quotes its last lines; nothing is left."""
    run_dir = _run_dir(settings)
    dying = _server("ps", "import sys; print('cannot bind: address in use'); sys.exit(3)")
    main = RoleSpec("client", ["sleep", "30"], "0")
    outcome = backend.run(run_dir, [dying, main], "client", None)
    assert not outcome.ok
    assert "the ps role (container tf_paramserver-" in outcome.message
    assert "exited with code 3 before tf_paramserver:2222 became reachable" in outcome.message
    assert "cannot bind: address in use" in outcome.message
    assert "cannot bind" in (run_dir / "ps.log").read_text()
    assert [] == labelled(docker_client, run_dir.name)


@pytest.mark.docker
def test_a_server_that_never_listens_times_out_naming_role_address_and_log(settings, kit_image, docker_client,
                                                                           no_leftover_containers):
    backend = DockerBackend(run_inputs(settings), kit_image.tag, client=docker_client, watchdog=kit_watchdog(probe_s=2))
    run_dir = _run_dir(settings)
    silent = _server("worker0", "import time; time.sleep(60)", "tf_worker_1:2222")
    outcome = backend.run(run_dir, [silent, RoleSpec("client", ["true"], "")], "client", None)
    assert not outcome.ok
    assert "the worker0 role (tf_worker_1:2222) is not reachable after 2 s" in outcome.message
    assert str(run_dir / "worker0.log") in outcome.message
    assert [] == labelled(docker_client, run_dir.name) == backend.teardown()


@pytest.mark.docker
def test_sigterm_stops_and_removes_every_container(backend: DockerBackend, settings, docker_client,
                                                   no_leftover_containers):
    """A `kill` of the kit mid-run becomes KeyboardInterrupt, after the teardown."""
    run_dir = _run_dir(settings)
    server = _server("ps", "import socket, time; s = socket.create_server(('', 2222)); time.sleep(60)")
    main = RoleSpec("client", ["sleep", "60"], "")

    def term_once_the_client_runs() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(n.startswith("container tf_client-") for n in labelled(docker_client, run_dir.name)):
                break
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=term_once_the_client_runs, daemon=True)
    killer.start()
    with pytest.raises(KeyboardInterrupt):
        backend.run(run_dir, [server, main], "client", None)
    killer.join(timeout=5)
    assert [] == labelled(docker_client, run_dir.name)


@pytest.mark.docker
def test_a_leftover_of_a_killed_run_is_removed_by_the_next_backend(settings, kit_image, docker_client):
    """A network whose owner process is dead (a run killed with -9) goes when a backend starts."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    name = f"reprokit-leftover-{uuid.uuid4().hex[:6]}"
    owner = f"{socket.gethostname()}/{boot_id()}/{dead.pid}/1"
    docker_client.networks.create(name, labels={RUN_LABEL: "leftover", OWNER_LABEL: owner})
    backend = DockerBackend(run_inputs(settings), kit_image.tag, client=docker_client,
                            watchdog=settings.watchdog)
    assert f"network {name}" in backend.facts()["leftovers_removed"]
    assert [] == docker_client.networks.list(names=[name])


@pytest.mark.docker
@pytest.mark.parametrize("owner, why", [
    (lambda: owner_token(), "still runs"),  # a live run: this very process
    (lambda: f"another-host/{boot_id()}/1/1", "not by this machine in this boot"),
    (lambda: f"{socket.gethostname()}:1", "is not a token of this kit version"),
])
def test_the_sweep_never_removes_what_a_live_or_unknown_owner_holds(settings, kit_image, docker_client, owner, why):
    """Only an owner known to be gone lets the sweep remove a leftover; the rest is named and kept."""
    name = f"reprokit-kept-{uuid.uuid4().hex[:6]}"
    network = docker_client.networks.create(name, labels={RUN_LABEL: "kept", OWNER_LABEL: owner()})
    try:
        backend = DockerBackend(run_inputs(settings), kit_image.tag, client=docker_client,
                            watchdog=settings.watchdog)
        assert [name] == [n.name for n in docker_client.networks.list(names=[name])]
        assert f"network {name}: " in backend.facts()["leftovers_kept"]
        assert why in backend.facts()["leftovers_kept"]
    finally:
        network.remove()


@pytest.mark.docker
def test_an_engine_that_stops_answering_mid_run_fails_the_run_naming_the_engine(settings, kit_image, docker_client,
                                                                              tmp_path: Path):
    """The kit talks to the engine through a socket that breaks once the client runs: the run
    fails, saying the engine stopped answering, and lists what it could not remove."""
    proxy = EngineProxy(tmp_path / "engine.sock")
    engine = docker.DockerClient(base_url=proxy.url, timeout=30)
    backend = DockerBackend(run_inputs(settings), kit_image.tag, client=engine, watchdog=settings.watchdog)
    run_dir = _run_dir(settings)
    server = _server("ps", "import socket, time; s = socket.create_server(('', 2222)); time.sleep(120)")
    main = RoleSpec("client", ["sleep", "120"], "")

    def stop_once_the_client_runs() -> None:
        wait_for(lambda: any(n.startswith("container tf_client-") for n in labelled(docker_client, run_dir.name)),
                 120, "the client container never started")
        proxy.stop()

    stopper = threading.Thread(target=stop_once_the_client_runs, daemon=True)
    stopper.start()
    try:
        outcome = backend.run(run_dir, [server, main], "client", None)
    finally:
        stopper.join(timeout=5)
        left = labelled(docker_client, run_dir.name)
        for container in docker_client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir.name}"}):
            container.remove(force=True)
        for network in docker_client.networks.list(filters={"label": f"{RUN_LABEL}={run_dir.name}"}):
            network.remove()
    assert not outcome.ok
    assert "is lost: the Docker engine stopped answering" in outcome.message
    assert "could not remove: " in outcome.message
    assert sorted(left) == sorted(f"{kind} {name.split(' ')[0]}" for kind, name in
                                  (item.split(" ", 1) for item in outcome.left))


# What a role sees of its container, printed as `key value` lines (no traffic is sent anywhere).
INSIDE = """
import os
routes = open("/proc/net/route").read().splitlines()[1:]
print("default_route", any(line.split()[1] == "00000000" for line in routes))
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
print("cap_eff", status["CapEff"].strip())
print("no_new_privs", status["NoNewPrivs"].strip())
try:
    open("/written-by-the-role", "w")
    print("root_writable", True)
except OSError:
    print("root_writable", False)
open("/tmp/scratch", "w").write("ok")
print("tmp_writable", True)
pids = [p for p in ("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max") if os.path.exists(p)]
print("pids_max", open(pids[0]).read().strip())  # cgroup v2, or v1
"""


def _isolation_rules(client: docker.DockerClient, run_id: str, found: list[str], stop: threading.Event) -> None:
    """While the run's network exists: the host's rules that drop what leaves or enters its bridge."""
    while not stop.is_set():
        for network in client.networks.list(filters={"label": f"{RUN_LABEL}={run_id}"}):
            network.reload()
            bridge = f"br-{network.id[:12]}"
            subnet = network.attrs["IPAM"]["Config"][0]["Subnet"]
            rules = subprocess.run(["iptables", "-S", "DOCKER-ISOLATION-STAGE-1"], capture_output=True,
                                   text=True).stdout
            found += [line for line in rules.splitlines() if bridge in line and subnet in line and "DROP" in line]
            if found:
                return
        time.sleep(0.2)


@pytest.mark.docker
def test_a_role_sees_no_route_out_no_capabilities_and_a_read_only_root(backend: DockerBackend, settings,
                                                                      docker_client, no_leftover_containers):
    """Proved from inside a container on the run's internal network, by the role itself: no
    capability, no new privileges, a read-only root, a pids limit; and no way out. Engines from
    Docker 25 give an internal network's containers no default route; older ones keep one but
    drop, on the host, every packet between the bridge and anything outside its subnet (read
    from the host's rules while the run goes on; no packet is sent anywhere)."""
    run_dir = _run_dir(settings)
    server = _server("ps", "import socket, time; s = socket.create_server(('', 2222)); time.sleep(60)")
    main = RoleSpec("client", ["python3", "-c", INSIDE + "import time; time.sleep(3)\n"], "")
    rules: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_isolation_rules, args=(docker_client, run_dir.name, rules, stop), daemon=True)
    watcher.start()
    try:
        outcome = backend.run(run_dir, [server, main], "client", None)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert outcome.ok, outcome.message
    seen = dict(line.split(" | ", 1)[1].split(" ", 1) for line in (run_dir / "client.log").read_text().splitlines()
                if " | " in line and not line.split(" | ", 1)[1].startswith("reprokit:"))
    assert {"cap_eff": "0000000000000000", "no_new_privs": "1", "root_writable": "False", "tmp_writable": "True",
            "pids_max": "2048"} == {k: v for k, v in seen.items() if k != "default_route"}
    if int(docker_client.version()["Version"].split(".")[0]) >= 25:
        assert "False" == seen["default_route"]
    else:
        assert any("-i br-" in rule and "! -d " in rule for rule in rules), rules  # nothing leaves the subnet
        assert any("-o br-" in rule and "! -s " in rule for rule in rules), rules  # nothing enters it
    assert [] == labelled(docker_client, run_dir.name)


# --- real runs ---------------------------------------------------------------------------------

def _tf_retry_flake(run_dir: Path) -> bool:
    """TensorFlow's own flake under CPU contention, seen with both backends: the ps retries a
    RunGraph, the worker refuses the duplicate, a queue-runner thread dies with a traceback."""
    client_log = run_dir / "client.log"
    return client_log.exists() and "request was received twice" in client_log.read_text(errors="replace")


@pytest.mark.docker
@pytest.mark.slow
def test_a_short_reproduction_in_containers_passes_and_leaves_nothing(backend: DockerBackend, settings,
                                                                      docker_client, kit_image,
                                                                      no_leftover_containers):
    """Standalone, then 1 ps + 2 workers + client, each in its own container: PASS by the rules."""
    for attempt in range(2):
        run_id = f"dk-{uuid.uuid4().hex[:8]}"
        steps: list[tuple[str, int]] = []
        result = reproduce(settings, RunPlan(kit_options(STEPS, 2, run_id=run_id), backend),
                           lambda line: None, lambda role, step, rate: steps.append((role, step)))
        if result.passed or not _tf_retry_flake(result.run_dir) or attempt:
            break
    assert result.passed, result.error or "\n".join(result.judgement.summary.lines if result.judgement else [])
    assert [("standalone", 0), ("standalone", 10), ("standalone", 20), ("client", 0), ("client", 10),
            ("client", 20)] == steps
    facts = result.results.backend
    assert ("docker", kit_image.tag, kit_image.id) == (facts["backend"], facts["image"], facts["image_id"])
    assert 2 == facts["network"].count(f"reprokit-{run_id}-")
    codes = result.results.modes["cluster"].outcome.exit_codes
    assert {"ps": 143, "worker0": 143, "worker1": 143, "client": 0} == codes  # servers: stopped by SIGTERM
    assert " -h tf_paramserver " in (result.run_dir / "ps.log").read_text().split("\n")[0]
    assert [] == labelled(docker_client, run_id)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("program, main", [("tf2-mirrored", "worker0"), ("tf2-ps", "client")])
def test_each_tf2_program_trains_in_containers_told_the_cluster_by_tf_config(backend: DockerBackend, settings,
                                                                           docker_client, kit_image, program, main,
                                                                           no_leftover_containers):
    """Only the cluster mode: each role a container named as the article names its hosts, each
    told its task by TF_CONFIG; the all-reduce workers reach each other, the coordinator its servers."""
    run_id = f"dk-{uuid.uuid4().hex[:8]}"
    result = reproduce(settings, RunPlan(kit_options(STEPS, 2, run_id=run_id,
                                         modes=("cluster",), program=program), backend), lambda line: None)
    assert result.passed, result.error or "\n".join(result.judgement.summary.lines if result.judgement else [])
    assert "step 20, loss = " in (result.run_dir / f"{main}.log").read_text()
    assert 0 == result.results.modes["cluster"].outcome.exit_codes[main]
    assert [] == labelled(docker_client, run_id)


def _kill_once_training(client: docker.DockerClient, run_dir: Path, role: str, killed: list[str]) -> None:
    """Kill `role`'s container once the client fills its queues or logs step 0."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        log = run_dir / "client.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        if "Filling queue" in text or "step 0," in text:
            filters = {"label": [f"{RUN_LABEL}={run_dir.name}", f"reprokit.role={role}"]}
            for container in client.containers.list(filters=filters):
                container.kill()
                killed.append(container.name or "")
            return
        time.sleep(0.2)


@pytest.mark.docker
@pytest.mark.slow
def test_a_worker_killed_mid_run_fails_the_run_naming_it(backend: DockerBackend, settings, docker_client,
                                                         no_leftover_containers):
    """docker kill of tf_worker_2 while the client trains: FAIL naming worker1; nothing is left."""
    run_id = f"dk-{uuid.uuid4().hex[:8]}"
    run_dir = settings.runs_dir.resolve() / run_id
    killed: list[str] = []
    killer = threading.Thread(target=_kill_once_training, args=(docker_client, run_dir, "worker1", killed),
                              daemon=True)
    killer.start()
    result = reproduce(settings, RunPlan(kit_options(STEPS, 2, run_id=run_id,
                                         modes=("cluster",)), backend), lambda line: None)
    killer.join(timeout=10)
    assert 1 == len(killed) and killed[0].startswith("tf_worker_2-")
    assert not result.passed
    assert f"the worker1 role (container {killed[0]}) exited with code 137 (killed by SIGKILL) while the " \
        "client was running" in result.error
    assert str(run_dir / "worker1.log") in result.error
    assert "failed" == next(s.status for s in result.stages if s.name == "cluster")
    # The failed run's outcome reaches the report all the same.
    failed = result.results.modes["cluster"].outcome if result.results else None
    assert failed is not None and (False, 137) == (failed.ok, failed.exit_codes.get("worker1"))
    assert [] == labelled(docker_client, run_id)


@pytest.mark.docker
@pytest.mark.slow
def test_a_tf2_ps_worker_killed_by_a_fault_is_restarted_as_a_new_container(settings, kit_image, docker_client,
                                                                           no_leftover_containers):
    """`--backend docker --program tf2-ps --workers 1 --fault kill:worker0@10`: the kit's runner kills
    the only worker's container, and the coordinator, which has no other worker to send steps to,
    waits; the kit starts the worker's next incarnation as a container of its own under the same
    alias, and the coordinator finishes every planned step; both incarnations' logs are kept; nothing
    is left. One worker, so that the restart is what the run waits for, however fast the machine."""
    run_id = f"dk-{uuid.uuid4().hex[:8]}"
    options = kit_options(FAULT_STEPS, 1, run_id=run_id, modes=("cluster",), program="tf2-ps")
    faulty = DockerBackend(run_inputs(settings), kit_image.tag, client=docker_client, watchdog=settings.watchdog,
                           faults=fault_plan(settings, options, ["kill:worker0@10"], "docker"))
    try:
        result = reproduce(settings, RunPlan(options, faulty), lambda line: None)
    finally:
        assert [] == faulty.teardown()
    assert result.passed, result.error or "\n".join(result.judgement.summary.lines if result.judgement else [])
    recovery = result.results.modes["cluster"].outcome.recovery
    assert ["fault", "exited", "restarted", "serving"] == [e["what"] for e in recovery["events"]]
    assert "exit code 137" == recovery["events"][1]["detail"]
    assert {"worker0": 1} == recovery["restarts"]
    assert "step 50, loss = " in (result.run_dir / "client.log").read_text()
    second = (result.run_dir / "worker0.2.log").read_text()
    assert " --name tf_worker_1-" in second.split("\n")[0] and ".2 " in second.split("\n")[0]
    assert "serving /job:worker/task:0" in second
    assert [] == labelled(docker_client, run_id)
