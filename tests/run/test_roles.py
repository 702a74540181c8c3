"""The pure builders of each role's command line and environment (no mocks: they run nothing)."""

from __future__ import annotations

import json

import pytest

from reprokit import PACKAGE_PARENT
from reprokit.errors import KitError
from reprokit.names import hostname
from reprokit.run.cluster import (
    Cluster,
    local_cluster,
    make_layout,
    parse_cpu_overrides,
)
from reprokit.run.role_server import from_tf_config
from reprokit.run.roles import (
    Instruments,
    RoleSpec,
    Trainer,
    TrainingArgs,
    all_reduce_roles,
    client_role,
    cluster_roles,
    coordinated_roles,
    server_role,
    standalone_role,
)

PY, SERVER, SOURCES = "/usr/bin/python3", "/kit/role_server.py", "/build/patched"
CLIENT = Trainer(PY, SOURCES, "cifar10_cluster_train.py")
STANDALONE = Trainer(PY, SOURCES, "cifar10_standalone_train.py")
CLUSTER = Cluster("172.17.0.2:2222", ("172.17.0.3:2222", "172.17.0.4:2222"))
TRAINING = TrainingArgs(1000, "/data", "/runs/r1/train_cluster")
SPEC_JSON = '{"ps": ["172.17.0.2:2222"], "worker": ["172.17.0.3:2222", "172.17.0.4:2222"]}'


@pytest.mark.parametrize("role, name", [
    ("ps", "tf_paramserver"), ("worker0", "tf_worker_1"), ("worker1", "tf_worker_2"),
    ("worker9", "tf_worker_10"), ("client", "tf_client"), ("standalone", "tf_standalone"),
])
def test_hostnames_are_the_articles_container_names(role: str, name: str):
    """worker0 is tf_worker_1: the article counts its containers from 1."""
    assert name == hostname(role)
    assert name == RoleSpec(role, [], "").hostname


def test_training_flags_are_the_trainers_own():
    """max_steps, data_dir and train_dir, then any extra flags in order."""
    training = TrainingArgs(21, "/d", "/t", ("--log_device_placement=false",))
    assert ["--max_steps=21", "--data_dir=/d", "--train_dir=/t", "--log_device_placement=false"] == training.flags()


def test_a_ps_role_serves_task_0_of_the_ps_job():
    """The ps runs role_server.py with the whole ClusterSpec as JSON and listens at the ps address."""
    role = server_role(CLUSTER, "ps", 0, python=PY, role_server=SERVER, cpus="0")
    assert "ps" == role.name
    assert [PY, SERVER, "--cluster", SPEC_JSON, "--job", "ps", "--task", "0"] == role.argv
    assert "172.17.0.2:2222" == role.address
    assert role.is_server
    assert "0" == role.cpus
    assert {"PYTHONUNBUFFERED": "1"} == role.env


def test_a_worker_role_serves_its_own_task_at_its_own_address():
    """worker1 is task 1 of the worker job, at the second worker address."""
    role = server_role(CLUSTER, "worker", 1, python=PY, role_server=SERVER, cpus="1")
    assert "worker1" == role.name
    assert ["--job", "worker", "--task", "1"] == role.argv[4:]
    assert json.loads(role.argv[3]) == CLUSTER.spec
    assert "172.17.0.4:2222" == role.address
    assert "tf_worker_2" == role.hostname


def test_thread_counts_are_passed_only_when_set():
    """(0, 0) is TensorFlow's default and adds no flags; anything else adds both."""
    plain = server_role(CLUSTER, "ps", 0, python=PY, role_server=SERVER, cpus="0")
    tuned = server_role(CLUSTER, "ps", 0, python=PY, role_server=SERVER, cpus="0", threads=(2, 1))
    assert "--intra-op-threads" not in plain.argv
    assert plain.argv + ["--intra-op-threads", "2", "--inter-op-threads", "1"] == tuned.argv


def test_the_client_runs_the_cluster_trainer_with_the_number_of_workers():
    """The patched cluster trainer, the training flags, then --num_workers."""
    role = client_role(CLUSTER, TRAINING, CLIENT, cpus="0,1")
    assert [PY, "/build/patched/cifar10_cluster_train.py", "--max_steps=1000", "--data_dir=/data",
            "--train_dir=/runs/r1/train_cluster", "--num_workers=2"] == role.argv
    assert not role.is_server
    assert role.address is None
    assert "0,1" == role.cpus


def test_the_client_is_told_where_the_ps_is_by_ps_node_and_ps_port():
    """Its session is on grpc://PS_NODE:PS_PORT, the ps's host and port."""
    role = client_role(CLUSTER, TRAINING, CLIENT, cpus="0")
    assert {"PYTHONUNBUFFERED": "1", "PS_NODE": "172.17.0.2", "PS_PORT": "2222"} == role.env


def test_extra_client_environment_is_kept_but_cannot_move_the_ps():
    """An extra variable is added; PS_NODE and PS_PORT always come from the cluster."""
    role = client_role(CLUSTER, TRAINING, CLIENT, cpus="0",
                       env={"TF_CPP_MIN_LOG_LEVEL": "2", "PS_NODE": "elsewhere"})
    assert "2" == role.env["TF_CPP_MIN_LOG_LEVEL"]
    assert "172.17.0.2" == role.env["PS_NODE"]


def test_the_standalone_role_runs_the_standalone_trainer_without_cluster_settings():
    """No --num_workers, no PS_NODE: it trains alone."""
    role = standalone_role(TrainingArgs(21, "/d", "/t"), STANDALONE, cpus="0")
    assert [PY, "/build/patched/cifar10_standalone_train.py", "--max_steps=21", "--data_dir=/d",
            "--train_dir=/t"] == role.argv
    assert {"PYTHONUNBUFFERED": "1"} == role.env
    assert "tf_standalone" == role.hostname
    assert not role.is_server


def test_cluster_roles_come_in_start_order_ps_workers_client():
    """The servers first, the client, which needs them, last."""
    cpus = make_layout("spread", 2, cpus=[0, 1]).cpus
    roles = cluster_roles(local_cluster(2), TRAINING, CLIENT, cpus, role_server=SERVER)
    assert ["ps", "worker0", "worker1", "client"] == [r.name for r in roles]
    assert ["127.0.0.1:2222", "127.0.0.1:2223", "127.0.0.1:2224", None] == [r.address for r in roles]
    assert {"PS_NODE": "127.0.0.1", "PS_PORT": "2222"}.items() <= roles[-1].env.items()


def test_the_article_layout_puts_every_cluster_role_on_cpu_0():
    """The article pins every container to CPU 0; so do the roles built from its layout."""
    cpus = make_layout("article", 2, cpus=[0, 1]).cpus
    roles = cluster_roles(local_cluster(2), TRAINING, CLIENT, cpus, role_server=SERVER)
    assert {"ps": "0", "worker0": "0", "worker1": "0", "client": "0"} == {r.name: r.cpus for r in roles}


def test_the_spread_layout_gives_the_workers_different_cpus():
    """On two CPUs, worker0 and worker1 each get their own; ps and client share both."""
    cpus = make_layout("spread", 2, cpus=[0, 1]).cpus
    roles = cluster_roles(local_cluster(2), TRAINING, CLIENT, cpus, role_server=SERVER)
    assert {"ps": "0,1", "worker0": "0", "worker1": "1", "client": "0,1"} == {r.name: r.cpus for r in roles}


def test_explicit_cpus_reach_the_roles_they_name():
    """--cpus ps=1,client=0:1 on the article layout changes those two roles only."""
    cpus = make_layout("article", 2, cpus=[0, 1], explicit=parse_cpu_overrides("ps=1,client=0:1")).cpus
    roles = cluster_roles(local_cluster(2), TRAINING, CLIENT, cpus, role_server=SERVER)
    assert {"ps": "1", "worker0": "0", "worker1": "0", "client": "0,1"} == {r.name: r.cpus for r in roles}


@pytest.mark.parametrize("text, message", [
    ("ps", "--cpus item 'ps' is not role=cpus"),
    ("worker0=", "--cpus item 'worker0=' is not role=cpus"),
    ("worker2=1", "--cpus names role 'worker2', which this run has not"),
    ("gpu=0", "--cpus names role 'gpu', which this run has not"),
])
def test_bad_cpus_input_is_refused_before_any_role_is_built(text: str, message: str):
    """Malformed items and unknown roles are errors that name the item or role."""
    with pytest.raises(KitError, match=message):
        make_layout("spread", 2, cpus=[0, 1], explicit=parse_cpu_overrides(text))


def test_a_role_spec_survives_the_plan_file():
    """to_json then from_json gives an equal RoleSpec (the supervisor reads roles from JSON)."""
    role = client_role(CLUSTER, TRAINING, CLIENT, cpus="0")
    server = server_role(CLUSTER, "worker", 0, python=PY, role_server=SERVER, cpus="1")
    for spec in (role, server):
        assert spec == RoleSpec.from_json(json.loads(json.dumps(spec.to_json())))


def test_a_client_hosting_the_ps_serves_the_ps_task_then_runs_the_trainer():
    """client_hosts_ps: no separate ps role; the client runs role_server.py --run-trainer."""
    cpus = make_layout("spread", 2, cpus=[0, 1]).cpus
    roles = cluster_roles(CLUSTER, TRAINING, CLIENT, cpus, role_server=SERVER,
                          threads=(1, 4), client_hosts_ps=True)
    assert ["worker0", "worker1", "client"] == [r.name for r in roles]
    client = roles[-1]
    assert not client.is_server
    cut = client.argv.index("--run-trainer")
    assert [PY, SERVER, "--cluster", SPEC_JSON, "--job", "ps", "--task", "0",
            "--intra-op-threads", "1", "--inter-op-threads", "4"] == client.argv[:cut]
    assert f"{SOURCES}/cifar10_cluster_train.py" == client.argv[cut + 1]
    assert "--" == client.argv[cut + 2]
    assert TRAINING.flags() + ["--num_workers=2"] == client.argv[cut + 3:]
    # The session target must be the in-process server's own: the ps address of the cluster.
    assert ("172.17.0.2", "2222") == (client.env["PS_NODE"], client.env["PS_PORT"])


def test_a_probe_of_a_client_hosting_the_ps_starts_the_same_server_in_process():
    """The benchmark's instruments keep the cluster, the threads, the trainer and its flags."""
    cpus = make_layout("spread", 2, cpus=[0, 1]).cpus
    probed = Trainer(PY, SOURCES, "cifar10_cluster_train.py", Instruments("/runs/probe.json", trace_step=25))
    client = cluster_roles(CLUSTER, TRAINING, probed, cpus, role_server=SERVER, threads=(1, 4),
                           client_hosts_ps=True)[-1]
    argv = client.argv
    assert [PY, "-m", "reprokit.bench.probe", "--sources", SOURCES, "--trainer", "cifar10_cluster_train",
            "--out", "/runs/probe.json", "--trace-step", "25"] == argv[:11]
    assert SPEC_JSON == argv[argv.index("--serve-ps") + 1]
    assert "1,4" == argv[argv.index("--ps-threads") + 1]
    assert TRAINING.flags() + ["--num_workers=2"] == argv[argv.index("--") + 1:]
    assert PACKAGE_PARENT == client.env["PYTHONPATH"]  # the probe is a module of the kit


def test_instruments_are_flags_of_the_probe_only_when_asked_for():
    """trace_step -1 traces nothing; input_free and variables_on_ps add their flags."""
    assert ["--out", "/p.json", "--trace-step", "-1"] == Instruments("/p.json").flags()
    assert ["--out", "/p.json", "--trace-step", "5", "--input-free", "--variables-on-ps"] == \
        Instruments("/p.json", 5, input_free=True, variables_on_ps=True).flags()


# --- the tf2 programs: the cluster told by TF_CONFIG ----------------------------------------------

MIRRORED = Trainer(PY, SOURCES, "cifar10_tf2_mirrored_train.py")
COORDINATOR = Trainer(PY, SOURCES, "cifar10_tf2_ps_train.py")
SPREAD = make_layout("spread", 2, cpus=[0, 1]).cpus


def test_every_all_reduce_worker_runs_the_trainer_told_its_task_by_tf_config():
    """No ps, no client: each worker is a trainer at its worker address; worker 0, the main role,
    starts last; only the others may end on their own."""
    roles = all_reduce_roles(local_cluster(2), TRAINING, MIRRORED, SPREAD)
    assert ["worker1", "worker0"] == [r.name for r in roles]
    assert [[PY, f"{SOURCES}/cifar10_tf2_mirrored_train.py", *TRAINING.flags()]] * 2 == [r.argv for r in roles]
    configs = [json.loads(r.env["TF_CONFIG"]) for r in roles]
    assert [{"worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}] * 2 == [c["cluster"] for c in configs]
    assert [{"type": "worker", "index": 1}, {"type": "worker", "index": 0}] == [c["task"] for c in configs]
    assert (["127.0.0.1:2224", "127.0.0.1:2223"], [True, False]) == \
        ([r.peer_address for r in roles], [r.ends_itself for r in roles])
    assert all(r.listens and not r.is_server and "all-reduce" in r.stall_hint for r in roles)
    assert {"worker0": "0", "worker1": "1"} == {r.name: r.cpus for r in roles}


def test_a_coordinated_cluster_serves_ps_and_workers_from_tf_config_then_the_coordinator_as_chief():
    roles = coordinated_roles(local_cluster(2), TRAINING, COORDINATOR, SPREAD, role_server=SERVER)
    assert ["ps", "worker0", "worker1", "client"] == [r.name for r in roles]
    spec = {"chief": ["127.0.0.1:2225"], "ps": ["127.0.0.1:2222"],
            "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}
    tasks = [from_tf_config(r.env["TF_CONFIG"]) for r in roles]
    assert [(spec, "ps", 0), (spec, "worker", 0), (spec, "worker", 1), (spec, "chief", 0)] == tasks
    assert ["127.0.0.1:2222", "127.0.0.1:2223", "127.0.0.1:2224", None] == [r.address for r in roles]
    assert "127.0.0.1:2225" == roles[-1].peer_address
    assert [PY, f"{SOURCES}/cifar10_tf2_ps_train.py", *TRAINING.flags()] == roles[-1].argv
    # One inter-op thread hangs ParameterServerStrategy's workers: never fewer than two.
    assert all(r.argv[2:] == ["--from-tf-config", "--intra-op-threads", "0", "--inter-op-threads", "2"]
               for r in roles[:-1])


def test_kit_settings_keep_their_server_threads_above_the_coordinators_floor():
    roles = coordinated_roles(local_cluster(1), TRAINING, COORDINATOR, SPREAD, role_server=SERVER, threads=(1, 4))
    assert ["1", "4"] == [roles[0].argv[-3], roles[0].argv[-1]]


def test_a_cluster_without_a_chief_address_cannot_be_coordinated():
    with pytest.raises(KitError, match="TF_CONFIG's chief"):
        coordinated_roles(CLUSTER, TRAINING, COORDINATOR, SPREAD, role_server=SERVER)


@pytest.mark.parametrize("text, why", [
    ("", "not set"), ("{", "must be JSON"), ('{"cluster": {}}', "must be JSON"),
    ('{"cluster": {}, "task": {"type": "ps"}}', "must be JSON"),
])
def test_a_bad_tf_config_is_named(text, why):
    with pytest.raises(ValueError, match=why):
        from_tf_config(text)


def test_a_role_with_its_peer_fields_survives_the_plan_file():
    role = all_reduce_roles(local_cluster(2), TRAINING, MIRRORED, SPREAD)[0]
    assert role == RoleSpec.from_json(json.loads(json.dumps(role.to_json())))
