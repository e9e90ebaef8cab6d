"""scripts/gpu_runbook.sh, the commands a lent GPU runs first, works the day a GPU comes: every phase at toy sizes
on the CPU (`--tiny`), each writing its file and its line of runbook.json."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_gpu_runbook_runs_every_phase_at_toy_sizes(tmp_path: Path) -> None:
    out, runs = tmp_path / "out", tmp_path / "runs"
    env = {**os.environ, "OUT": str(out), "RUNS": str(runs), "AZJAX_CPU_DEVICES": "1"}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_runbook.sh"), "--tiny"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    book = json.loads((out / "runbook.json").read_text())
    assert [p["phase"] for p in book["phases"]] == ["plan", "bench", "start_cold", "start_warm", "sweep", "train"]
    assert all(p["seconds"] > 0 and p["command"] for p in book["phases"])
    plan = json.loads((out / "plan_connect_four.json").read_text())
    assert plan["xla_bytes"] > 0 and plan["compile_s"] > 0
    assert json.loads((out / "bench_full.json").read_text())
    assert json.loads((out / "bench_sweep.json").read_text())
    assert (out / "connect_four_tiny" / "params.msgpack").stat().st_size > 0
    cold, warm, train = (next(p for p in book["phases"] if p["phase"] == k) for k in ("start_cold", "start_warm",
                                                                                     "train"))
    assert cold["cache_entries_before"] == 0 and "jit__step_local" in cold["new_cache_entries"]
    assert warm["cache_entries_before"] > 0 and "jit__step_local" not in warm["new_cache_entries"]
    # The train phase's loop is the start phase's program (`--stop_after 1`, same config): read, not compiled. (Small
    # programs may still be added: JAX caches whatever took over a second to compile, and a loaded machine is slow.)
    assert train["cache_entries_before"] > 0 and "jit__step_local" not in train["new_cache_entries"]


def test_the_runbook_refuses_an_unknown_phase_in_one_line() -> None:
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_runbook.sh"), "benhc"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "unknown argument benhc" in proc.stderr


@pytest.mark.slow
def test_a_gpu_loan_cuts_an_item_at_its_limit_and_still_packs_what_came_back(tmp_path: Path) -> None:
    # A lent GPU's command dies at its limit with nothing returned; the loan script's items end by themselves.
    env = {**os.environ, "OUT": str(tmp_path), "AZJAX_CPU_DEVICES": "1"}
    loan_items = ["plan_connect_four:2", "sai_7x7:2", "loan_go_9x9:2", "benhc:5"]
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_loan.sh"), *loan_items], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    subprocess.run(["tar", "xzf", str(tmp_path / "gpu_loan.tgz"), "-C", str(tmp_path)], check=True)
    items = (tmp_path / "gpu_loan" / "items.log").read_text()
    assert "plan_connect_four: exit 124" in items  # timeout's status: cut at 2 s
    for item in ("sai_7x7", "loan_go_9x9"):
        assert f"{item}: exit" in items and "unknown item" not in (tmp_path / "gpu_loan" / f"{item}.log").read_text()
    assert "unknown item benhc" in (tmp_path / "gpu_loan" / "benhc.log").read_text()
