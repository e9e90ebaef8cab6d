"""scripts/train_segment.sh: a long run's session segments, each ending with what a later session resumes from in a
committed folder; a segment on a fresh machine (the run directory gone) goes on from that folder."""

from __future__ import annotations

import csv
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--game", "connect_four", "--num_envs", "8", "--num_simulations", "4", "--moves_per_step", "8",
        "--replay_size", "64", "--min_replay_size", "8", "--batch_size", "8", "--sgd_steps_per_step", "1",
        "--num_blocks", "1", "--num_channels", "8", "--eval_every", "0", "--checkpoint_every", "2",
        "--lr_warmup_steps", "1", "--num_steps", "4"]


def segment(run: Path, keep: Path, minutes: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts" / "train_segment.sh"), str(run), str(keep), minutes, *args],
                          capture_output=True, text=True, timeout=900, env={"AZJAX_CPU_DEVICES": "1",
                                                                           "PATH": _path()})


def _path() -> str:
    import os
    import sys

    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def steps(keep: Path) -> list[int]:
    with open(keep / "metrics.csv") as f:
        return [int(row["step"]) for row in csv.DictReader(f)]


@pytest.mark.slow
def test_a_run_goes_on_from_its_kept_folder_on_a_fresh_machine(tmp_path):
    run, keep = tmp_path / "runs" / "a", tmp_path / "results" / "a"
    first = segment(run, keep, "0.01", *TINY)  # stops after its first step, which compiles
    assert first.returncode == 0, first.stderr
    done = steps(keep)
    assert 1 <= done[-1] < 4 and (keep / "trainer.msgpack").exists() and (keep / "params.msgpack").exists()
    shutil.rmtree(tmp_path / "runs")  # the machine is gone; the kept folder was committed
    second = segment(run, keep, "30")
    assert second.returncode == 0, second.stderr
    assert steps(keep) == [1, 2, 3, 4]
    commands = (keep / "command.txt").read_text().splitlines()
    assert len(commands) == 2 and "(new," in commands[0] and f"(resumed from {keep}/trainer.msgpack," in commands[1]
    log = (keep / "train_log.txt").read_text()
    assert log.count("# segment:") == 2 and "resumed from step" in log
