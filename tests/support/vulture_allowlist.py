"""Names vulture (tests/test_dead_code.py) would call unused, and why they are not.

vulture reads this file, never Python: each line only marks a name as used. Every name here must
still be defined in the package (the test checks it), so the list cannot outlive what it excuses.
"""
# ruff: noqa: B018, F821

# Fields of records written to JSON with `asdict` (bench.json, sweep.json, network.json,
# results.json, mutants.json, probe.json): a person or a later reader reads them, the package
# writes them without naming them again.
_.format_version
_.wall_s
_.repetition_results
_.label_counts
_.synthetic_params
_.sec_per_batch
_.exit_codes

# TypedDict keys of the Docker engine's JSON (run/containers/engine_json.py) and of the probe's
# trace (bench/timeline.py): the shapes of documents other programs write.
_.errorDetail
_.Status
_.ExitCode
_.OOMKilled
_.Gone
_.total_usage
_.cpu_usage
_.cpu_stats
_.ContainerID
_.State
_.Err
_.ContainerStatus
_.CreatedAt
_.NodeID
_.Availability
_.Hostname
_.ID
_.Spec
_.Description
_.start_us
_.us
_.all_us
_.run_start_us

# Keyword arguments of the Docker SDK's containers.create, typed (run/containers/specs.py):
# the SDK reads them from the dict the kit builds.
_.cap_drop
_.security_opt
_.tmpfs
_.pids_limit
_.environment
_.networking_config
_.auto_remove
_.detach
_.stdin_open
_.tty
_.cpuset_cpus

# The probes replace the tutorial's input function inside the trainer's module (bench/probe.py),
# and the update probe its download and its TF2 dataset function too (updates/probe.py).
_.distorted_inputs
_.maybe_download_and_extract
_.distorted_dataset
