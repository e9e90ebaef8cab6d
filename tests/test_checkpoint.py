"""azjax.checkpoint's helpers for results files (checkpoints and models are tested with the loop, tests/train)."""

from __future__ import annotations

from pathlib import Path

import pytest

from azjax.checkpoint import earlier_commands, script_command, script_module

ROOT = Path(__file__).resolve().parents[1]


def test_a_scripts_command_reruns_it_from_the_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZJAX_CPU_DEVICES", raising=False)
    assert script_command(ROOT / "lab" / "sai_7x7" / "sai_7x7.py", ["--seed", "1", "--out", "a b.json"]) == (
        "python -m lab.sai_7x7.sai_7x7 --seed 1 --out 'a b.json'")
    assert script_command(ROOT / "scripts" / "bench_sweep.py", []) == "python -m scripts.bench_sweep"


def test_a_scripts_module_is_named_by_the_packages_above_it_wherever_the_checkout_is(tmp_path: Path) -> None:
    study = tmp_path / "checkout" / "lab" / "a_study"
    study.mkdir(parents=True)
    for package in (study.parent, study):
        (package / "__init__.py").write_text("")
    (study / "probe.py").write_text("")
    assert script_module(study / "probe.py") == "lab.a_study.probe"
    (tmp_path / "loose.py").write_text("")
    assert script_module(tmp_path / "loose.py") == "loose"  # outside any package: the file's own name


def test_a_scripts_command_keeps_the_cpu_split_it_ran_with(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZJAX_CPU_DEVICES", "2")
    assert script_command(ROOT / "lab" / "sai_7x7" / "sai_7x7.py", ["--seed", "1"]) == (
        "AZJAX_CPU_DEVICES=2 python -m lab.sai_7x7.sai_7x7 --seed 1")


def test_a_resumed_results_file_keeps_every_command_that_made_it_once_and_in_order() -> None:
    first = {"command": "python -m lab.sai_7x7.sai_7x7 --seed 0"}
    assert earlier_commands(first, "python -m lab.sai_7x7.sai_7x7 --seed 0 --resume") == [first["command"]]
    report = {"command": "python -m lab.sai_7x7.sai_7x7 --report_only", "training_command": first["command"],
              "earlier_commands": [first["command"]]}
    assert earlier_commands(report, "python -m lab.sai_7x7.sai_7x7 --seed 0 --resume") == [
        first["command"], "python -m lab.sai_7x7.sai_7x7 --report_only"]
    assert earlier_commands(first, first["command"]) == []  # the same command again adds nothing
