"""The cluster: addresses, cluster files, CPU layouts, --cpus overrides and port checks."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from reprokit.errors import KitError, PortBusyError
from reprokit.run.cluster import (
    Cluster,
    load_cluster,
    local_cluster,
    make_layout,
    parse_cpu_overrides,
    port_holder,
    require_free_ports,
)
from tests.support.processes import free_port

# The article's cluster, as its interactive Pythons build it (shared/spec/article.md).
ARTICLE_CLUSTER = {"ps": ["172.17.0.2:2222"], "worker": ["172.17.0.3:2222", "172.17.0.4:2222"]}


def test_the_spec_is_the_articles_shape():
    """A Cluster's spec is {"ps": [one address], "worker": [addresses]}, as tf.train.ClusterSpec takes."""
    cluster = Cluster(ARTICLE_CLUSTER["ps"][0], tuple(ARTICLE_CLUSTER["worker"]))
    assert ARTICLE_CLUSTER == cluster.spec
    assert "172.17.0.2" == cluster.ps_host
    assert 2222 == cluster.ps_port


def test_addresses_name_the_roles_ps_then_worker0_worker1():
    """Role names count workers from 0, in the order of the spec."""
    cluster = Cluster("h:1", ("h:2", "h:3"))
    assert {"ps": "h:1", "worker0": "h:2", "worker1": "h:3"} == cluster.addresses()


def test_a_local_cluster_puts_ps_on_the_first_port_and_workers_after_it():
    """local_cluster(2) is ps on 2222, workers on 2223 and 2224, all on loopback; the client's
    own port (a coordinator's, TF_CONFIG's chief) comes after them."""
    assert Cluster("127.0.0.1:2222", ("127.0.0.1:2223", "127.0.0.1:2224"), "127.0.0.1:2225") == local_cluster(2)
    assert Cluster("10.0.0.1:5000", ("10.0.0.1:5001",), "10.0.0.1:5002") == \
        local_cluster(1, host="10.0.0.1", first_port=5000)


def test_a_cluster_without_workers_is_refused():
    """Zero workers is an error naming the number."""
    with pytest.raises(KitError, match="at least 1 worker, got 0"):
        local_cluster(0)


def test_a_cluster_file_in_the_articles_shape_loads(tmp_path: Path):
    """The JSON the article's Pythons build loads as a Cluster, with no placement."""
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(ARTICLE_CLUSTER))
    assert (Cluster("172.17.0.2:2222", ("172.17.0.3:2222", "172.17.0.4:2222")), {}) == load_cluster(path)


def test_a_cluster_files_placement_loads_with_its_cluster(tmp_path: Path):
    """One read gives both: the swarm backend's placement comes from the same file as the workers."""
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({**ARTICLE_CLUSTER, "placement": {"ps": "node-a"}}))
    assert {"ps": "node-a"} == load_cluster(path)[1]


@pytest.mark.parametrize("content, message", [
    ("not json", "cannot read a cluster description"),
    (json.dumps({"ps": [], "worker": ["h:1"]}), "exactly one ps and at least one worker, found 0 and 1"),
    (json.dumps({"ps": ["h:1", "h:2"], "worker": ["h:3"]}), "found 2 and 1"),
    (json.dumps({"ps": ["h:1"]}), "found 1 and 0"),
    (json.dumps({"ps": ["h:1"], "worker": ["nohostport"]}), "'nohostport' is not host:port"),
    (json.dumps({"ps": ["h:99999"], "worker": ["h:1"]}), "'h:99999' is not host:port"),
    (json.dumps({"ps": [":2222"], "worker": ["h:1"]}), "':2222' is not host:port"),
    (json.dumps(["h:1"]), "a JSON object, not list"),
    (json.dumps({"ps": ["h:1"], "worker": ["h:2"], "placement": ["node-a"]}), "placement must map roles"),
    (json.dumps({"ps": ["h:1"], "worker": ["h:2"], "placement": {"ps": 3}}), "placement must map roles"),
])
def test_a_bad_cluster_file_is_refused_naming_the_file(tmp_path: Path, content: str, message: str):
    """Unreadable JSON, wrong counts and malformed addresses each say what is wrong, in which file."""
    path = tmp_path / "cluster.json"
    path.write_text(content)
    with pytest.raises(KitError, match=message) as caught:
        load_cluster(path)
    assert str(path) in str(caught.value)


def test_a_missing_cluster_file_is_refused_with_an_example():
    """The hint shows what a cluster file looks like."""
    with pytest.raises(KitError) as caught:
        load_cluster(Path("/nonexistent/cluster.json"))
    assert '{"ps": ["172.17.0.2:2222"]' in caught.value.hint


def test_the_article_layout_pins_every_role_to_the_first_cpu():
    """As the article's commands: standalone, ps, client and both workers on CPU 0."""
    layout = make_layout("article", 2, cpus=[0, 1])
    assert "article" == layout.name
    assert {"standalone": "0", "ps": "0", "client": "0", "worker0": "0", "worker1": "0"} == layout.cpus


def test_the_article_layout_uses_the_first_cpu_this_process_may_use():
    """Without a CPU list it takes this process's affinity, not a hard-coded 0."""
    first = str(min(os.sched_getaffinity(0)))
    assert {first} == set(make_layout("article", 2).cpus.values())


def test_the_spread_layout_on_two_cpus_gives_each_worker_its_own():
    """Two CPUs, two workers: worker0 on 0, worker1 on 1, ps and client share both."""
    layout = make_layout("spread", 2, cpus=[0, 1])
    assert {"standalone": "0", "worker0": "0", "worker1": "1", "ps": "0,1", "client": "0,1"} == layout.cpus


def test_the_spread_layout_with_a_cpu_to_spare_gives_it_to_ps_and_client():
    """Three CPUs: the one after the workers' goes to ps and client."""
    layout = make_layout("spread", 2, cpus=[0, 1, 2])
    assert {"standalone": "0", "worker0": "0", "worker1": "1", "ps": "2", "client": "2"} == layout.cpus


def test_the_spread_layout_wraps_workers_round_robin_on_few_cpus():
    """One CPU, three workers: everything on that CPU."""
    layout = make_layout("spread", 3, cpus=[5])
    assert {"5"} == set(layout.cpus.values())
    assert {"standalone", "ps", "client", "worker0", "worker1", "worker2"} == set(layout.cpus)


def test_explicit_cpus_override_the_layout_and_say_so_in_its_name():
    """--cpus replaces only the roles it names; the layout's name records the override."""
    layout = make_layout("article", 2, cpus=[0, 1], explicit={"worker1": "1", "ps": "0,1"})
    assert "article+explicit" == layout.name
    assert {"standalone": "0", "ps": "0,1", "client": "0", "worker0": "0", "worker1": "1"} == layout.cpus
    assert "1" == layout.for_role("worker1")


def test_explicit_cpus_for_a_role_the_run_has_not_are_refused():
    """worker2 in a 2-worker run is an error that lists the roles there are."""
    with pytest.raises(KitError, match="names role 'worker2', which this run has not") as caught:
        make_layout("spread", 2, cpus=[0, 1], explicit={"worker2": "1"})
    assert "roles: standalone, ps, client, worker0, worker1" == caught.value.hint


def test_an_unknown_layout_is_refused_listing_the_known_ones():
    """The hint names article and spread."""
    with pytest.raises(KitError, match="unknown CPU layout 'packed'") as caught:
        make_layout("packed", 2, cpus=[0, 1])
    assert "choose one of article, spread" == caught.value.hint


def test_cpu_overrides_parse_into_a_table():
    """'ps=0,worker0=1' is {ps: 0, worker0: 1}; spaces and empty items are ignored."""
    assert {"ps": "0", "worker0": "1"} == parse_cpu_overrides("ps=0,worker0=1")
    assert {"ps": "0", "client": "1"} == parse_cpu_overrides(" ps = 0 , , client=1 ,")
    assert {} == parse_cpu_overrides("")


def test_cpu_override_ranges_may_be_written_with_a_dash_or_a_colon():
    """A comma separates items, so a list inside one is written 0:1 and handed to taskset as 0,1."""
    assert {"ps": "0-1", "client": "0,1"} == parse_cpu_overrides("ps=0-1,client=0:1")


@pytest.mark.parametrize("text", ["ps", "ps=", "ps:0"])
def test_a_cpu_override_that_is_not_role_equals_cpus_is_refused(text: str):
    """Each malformed item is named, with an example of the right form."""
    with pytest.raises(KitError) as caught:
        parse_cpu_overrides(f"worker0=1,{text}")
    assert f"--cpus item {text!r} is not role=cpus" == caught.value.message
    assert "e.g. --cpus ps=0,worker0=1,worker1=1" == caught.value.hint


def test_an_override_with_no_role_names_an_empty_role():
    """'=0' parses to role '' and the layout then refuses it: it is no role of the run."""
    with pytest.raises(KitError, match="names role '', which this run has not"):
        make_layout("spread", 2, cpus=[0, 1], explicit=parse_cpu_overrides("=0"))


def test_free_ports_pass_the_check():
    """Nothing holds a just-freed port: no error."""
    port = free_port()
    require_free_ports({"ps": f"127.0.0.1:{port}"})


@pytest.mark.parametrize("host, reuse", [("127.0.0.1", False), ("0.0.0.0", False), ("0.0.0.0", True)])
def test_a_busy_port_names_the_role_the_port_and_its_holder(host: str, reuse: bool):
    """A listener on the ps port (this test's own process; with SO_REUSEADDR and SO_REUSEPORT set,
    as gRPC's) is reported by port, role and pid."""
    with socket.socket() as holder:
        if reuse:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind((host, 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PortBusyError) as caught:
            require_free_ports({"ps": f"127.0.0.1:{port}"})
    error = caught.value
    assert error.message.startswith(f"port {port} for the ps role (127.0.0.1:{port}) is already in use by "
                                    f"pid {os.getpid()} (")
    assert "--isolation netns" in error.hint and "--first-port" not in error.hint  # no task has that option


def test_a_port_whose_connections_linger_in_time_wait_is_free():
    """A run that just ended leaves its servers' ports in TIME_WAIT; that is no holder, and the
    next run may use them (TF's servers can), so the check passes."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's servers do
        server.bind(("0.0.0.0", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            accepted.close()  # the server's side closes first: its port goes to TIME_WAIT
            client.recv(1)
    rows = [r.split() for r in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    assert any(r[3] == "06" and int(r[1].rsplit(":", 1)[1], 16) == port for r in rows), "no TIME_WAIT made"
    require_free_ports({"ps": f"127.0.0.1:{port}"})


def test_the_holder_of_a_listening_port_is_found_in_proc():
    """port_holder names the pid and the start of its command line."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        found = port_holder(holder.getsockname()[1])
    cmdline = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    assert f"pid {os.getpid()} ({cmdline[:80]})" == found


def test_a_port_nobody_listens_on_has_an_unknown_holder():
    """Best effort: no listener found is said plainly."""
    assert "an unknown process" == port_holder(free_port())
