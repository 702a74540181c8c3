"""Every default lives in invoke.yaml: no signature or record of the package types a value for a
setting's name. The package is read with `ast`, so a new `probe_timeout_s: float = 60.0` fails here
the day it is written; None ("not given: invoke.yaml's value applies") is the one default allowed."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import yaml

from reprokit.settings import Settings
from tests.support import REPO

# The names under `reprokit:` in invoke.yaml, and the watchdog they make (Settings.watchdog).
# `root` is where the kit is, not a setting anyone writes.
SETTING_NAMES = {f.name for f in fields(Settings)} - {"root"} | {"watchdog"}


def typed_defaults(source: str, names: set[str]) -> list[str]:
    """Each parameter or class field called one of ``names`` whose default is not None."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = node.args.posonlyargs + node.args.args
            defaults = [None] * (len(positional) - len(node.args.defaults)) + list(node.args.defaults)
            pairs = [*zip(positional, defaults), *zip(node.args.kwonlyargs, node.args.kw_defaults)]
            found += [f"{node.lineno}: {node.name}({arg.arg}={ast.unparse(value)})" for arg, value in pairs
                      if value is not None and arg.arg in names and ast.unparse(value) != "None"]
        elif isinstance(node, ast.ClassDef):
            found += [f"{item.lineno}: {node.name}.{item.target.id} = {ast.unparse(item.value)}" for item in node.body
                      if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                      and item.value is not None and item.target.id in names and ast.unparse(item.value) != "None"]
    return found


def test_no_setting_has_a_default_typed_in_the_package() -> None:
    offenders = {str(path.relative_to(REPO)): found for path in sorted((REPO / "reprokit").rglob("*.py"))
                 if (found := typed_defaults(path.read_text(encoding="utf-8"), SETTING_NAMES))}
    assert {} == offenders


def test_the_scan_finds_a_default_in_a_signature_and_in_a_record() -> None:
    """The check fails on the shapes it is there to catch, and lets None through."""
    source = (
        "class Plan:\n    probe_timeout_s: float = 60.0\n    isolation: str | None = None\n"
        "def run(steps, *, workers=2, program=None):\n    pass\n"
    )
    assert ["2: Plan.probe_timeout_s = 60.0", "4: run(workers=2)"] == typed_defaults(source, SETTING_NAMES)


def test_every_setting_has_its_one_value_in_the_kits_invoke_yaml() -> None:
    """The other half: each setting is written in invoke.yaml (from_mapping refuses a missing one)."""
    written = set(yaml.safe_load(Path(REPO / "invoke.yaml").read_text())["reprokit"])
    assert SETTING_NAMES - {"watchdog"} == written
