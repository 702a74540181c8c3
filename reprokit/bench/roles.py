"""Pure builders for the benchmark: a trainer role turned into an instrumented probe role."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reprokit import PACKAGE_PARENT
from reprokit.run.roles import RoleSpec


def probe_role(role: RoleSpec, out: str, *, trace_step: int = -1, input_free: bool = False,
               variables_on_ps: bool = False) -> RoleSpec:
    """The same trainer, flags, CPUs and environment, run under reprokit.bench.probe."""
    serve: list[str] = []
    if "--run-trainer" in role.argv:  # role_server.py hosting the ps, then running the trainer
        cut = role.argv.index("--run-trainer")
        server_args = role.argv[:cut]
        threads = [server_args[server_args.index(f"--{k}-op-threads") + 1] if f"--{k}-op-threads" in server_args
                   else "0" for k in ("intra", "inter")]
        serve = ["--serve-ps", server_args[server_args.index("--cluster") + 1], "--ps-threads", ",".join(threads)]
        python, trainer_path, flags = role.argv[0], role.argv[cut + 1], role.argv[cut + 3:]
    else:
        python, trainer_path, *flags = role.argv
    trainer = Path(trainer_path)
    argv = [python, "-m", "reprokit.bench.probe", "--sources", str(trainer.parent), "--trainer", trainer.stem,
            "--out", out, "--trace-step", str(trace_step), *serve]
    argv += ["--input-free"] if input_free else []
    argv += ["--variables-on-ps"] if variables_on_ps else []
    env = {**role.env, "PYTHONPATH": PACKAGE_PARENT}
    return replace(role, argv=[*argv, "--", *flags], env=env)
