"""azjax.checkpoint's helpers for results files (checkpoints and models are tested with the loop, tests/train)."""

from __future__ import annotations

import pytest

from azjax.checkpoint import earlier_commands, script_command


def test_a_scripts_command_reruns_it_from_the_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZJAX_CPU_DEVICES", raising=False)
    assert script_command("/anywhere/scripts/sai_7x7.py", ["--seed", "1", "--out", "a b.json"]) == (
        "python scripts/sai_7x7.py --seed 1 --out 'a b.json'")


def test_a_scripts_command_keeps_the_cpu_split_it_ran_with(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZJAX_CPU_DEVICES", "2")
    assert script_command("scripts/sai_7x7.py", ["--seed", "1"]) == (
        "AZJAX_CPU_DEVICES=2 python scripts/sai_7x7.py --seed 1")


def test_a_resumed_results_file_keeps_every_command_that_made_it_once_and_in_order() -> None:
    first = {"command": "python scripts/sai_7x7.py --seed 0"}
    assert earlier_commands(first, "python scripts/sai_7x7.py --seed 0 --resume") == [first["command"]]
    report = {"command": "python scripts/sai_7x7.py --report_only", "training_command": first["command"],
              "earlier_commands": [first["command"]]}
    assert earlier_commands(report, "python scripts/sai_7x7.py --seed 0 --resume") == [
        first["command"], "python scripts/sai_7x7.py --report_only"]
    assert earlier_commands(first, first["command"]) == []  # the same command again adds nothing
