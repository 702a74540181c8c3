"""The Swarm stack file, as pure data: services, network, CPUs, placement, labels, restart policy;
and a service log frame's task (no engine)."""

from __future__ import annotations

from dataclasses import replace

import yaml

from reprokit.run.faults import FaultPlan
from reprokit.run.roles import RoleSpec
from reprokit.run.swarm.handle import task_of
from reprokit.run.swarm.stack import (
    StackSpec,
    constraint,
    cpu_count,
    dump,
    stack_file,
    stack_name,
)

SPEC = StackSpec("reprokit/tf-cluster:tf2.21.0-0123456789ab", "run1", "host/boot/42/7",
                 {"/src": {"bind": "/src", "mode": "ro"}, "/runs/run1": {"bind": "/runs/run1", "mode": "rw"}},
                 "1000:1000", {"ps": "node-a", "worker1": "node.labels.zone == b"})
ROLES = [RoleSpec("ps", ["python3", "role_server.py"], "0,1", {"A": "1"}, "tf_paramserver:2222"),
         RoleSpec("worker0", ["python3", "role_server.py"], "0", {}, "tf_worker_1:2222"),
         RoleSpec("worker1", ["python3", "role_server.py"], "1", {}, "tf_worker_2:2222"),
         RoleSpec("client", ["python3", "train.py"], "0,1", {})]


def test_each_role_is_a_service_named_as_the_articles_container_with_no_published_port():
    services = stack_file(ROLES, SPEC)["services"]
    assert ["tf_paramserver", "tf_worker_1", "tf_worker_2", "tf_client"] == list(services)
    assert all("ports" not in s for s in services.values())
    ps = services["tf_paramserver"]
    assert (SPEC.image, ["python3", "role_server.py"], {"A": "1"}, "1000:1000") == \
        (ps["image"], ps["command"], ps["environment"], ps["user"])
    assert {"cluster": {"aliases": ["tf_paramserver"]}} == ps["networks"]


def test_the_overlay_is_internal_and_attachable_and_tasks_are_not_restarted():
    document = stack_file(ROLES, SPEC)
    assert {"driver": "overlay", "attachable": True, "internal": True} == \
        {k: v for k, v in document["networks"]["cluster"].items() if k != "labels"}
    for service in document["services"].values():
        assert {"condition": "none"} == service["deploy"]["restart_policy"]
        assert (True, ["ALL"], True) == (service["read_only"], service["cap_drop"], service["init"])


def test_the_roles_the_program_takes_back_get_the_kits_restart_policy_as_the_swarms():
    """tf2-ps's workers: restarted on failure after restart_backoff_s, at most backoff_limit times;
    its ps and client, which it cannot take back, are not restarted."""
    faults = FaultPlan((), ("worker0", "worker1"), {"ps": "why", "client": "why"}, (130, 137, 143), 3, 2.0, "", False)
    services = stack_file(ROLES, replace(SPEC, faults=faults))["services"]
    policies = {name: service["deploy"]["restart_policy"] for name, service in services.items()}
    assert {"tf_paramserver": {"condition": "none"}, "tf_client": {"condition": "none"},
            "tf_worker_1": {"condition": "on-failure", "delay": "2s", "max_attempts": 3},
            "tf_worker_2": {"condition": "on-failure", "delay": "2s", "max_attempts": 3}} == policies


def test_cpus_become_limits_and_only_unshared_ones_reservations():
    """No cpuset in Swarm: the workers reserve their CPU, the ps and client (sharing) only limit."""
    services = stack_file(ROLES, SPEC)["services"]
    assert {"limits": {"cpus": "1"}, "reservations": {"cpus": "1"}} == services["tf_worker_1"]["deploy"]["resources"]
    assert {"limits": {"cpus": "2"}} == services["tf_paramserver"]["deploy"]["resources"]
    assert (1, 2, 4) == (cpu_count("0"), cpu_count("0,1"), cpu_count("0-3"))


def test_placement_is_a_node_name_or_a_written_constraint():
    services = stack_file(ROLES, SPEC)["services"]
    assert ["node.hostname == node-a"] == services["tf_paramserver"]["deploy"]["placement"]["constraints"]
    assert ["node.labels.zone == b"] == services["tf_worker_2"]["deploy"]["placement"]["constraints"]
    assert "placement" not in services["tf_client"]["deploy"]
    assert "node.hostname != x" == constraint("node.hostname != x")


def test_the_folders_are_bind_mounts_at_the_same_paths_and_tmp_a_tmpfs():
    volumes = stack_file(ROLES, SPEC)["services"]["tf_client"]["volumes"]
    assert {"type": "bind", "source": "/src", "target": "/src", "read_only": True} in volumes
    assert {"type": "bind", "source": "/runs/run1", "target": "/runs/run1", "read_only": False} in volumes
    assert {"type": "tmpfs", "target": "/tmp"} in volumes


def test_labels_name_run_owner_and_role_on_services_and_containers():
    service = stack_file(ROLES, SPEC)["services"]["tf_worker_1"]
    expected = {"reprokit.run": "run1", "reprokit.owner": "host/boot/42/7", "reprokit.role": "worker0"}
    assert expected == service["labels"] == service["deploy"]["labels"]


def test_the_file_opens_with_how_to_use_it_and_reads_back_as_the_same_document():
    document = stack_file(ROLES, SPEC)
    text = dump(document, "deploy it:\n  docker stack deploy -c stack.yml NAME")
    assert text.startswith("# deploy it:\n#   docker stack deploy -c stack.yml NAME\n")
    assert "&id" not in text  # no YAML anchors: a person reads every service whole
    assert document == yaml.safe_load(text)


def test_stack_names_are_safe_and_one_per_run_and_mode():
    assert "reprokit-my-run-1-cluster" == stack_name("My run/1", "cluster")


def test_a_service_log_frame_names_its_task_and_reads_as_a_container_frame_without_it():
    """A frame as Docker 20.10 streams `service.logs(timestamps=True, details=True)`."""
    frame = (b"2026-12-06T20:06:08.351871587Z com.docker.swarm.node.id=ti05f6,com.docker.swarm.service.id=pkyq,"
             b"com.docker.swarm.task.id=zgbm8q hello world\n")
    assert ("zgbm8q", b"2026-12-06T20:06:08.351871587Z hello world\n") == task_of(frame)
    plain = b"2026-12-06T20:06:08.351871587Z hello world\n"
    assert ("", plain) == task_of(plain)
