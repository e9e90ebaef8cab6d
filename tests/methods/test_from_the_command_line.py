"""Go-Exploit, TDLeaf(lambda), playout caps and random openings switched on together from the command line: the
run trains, its metrics.csv carries each method's measures, and a bad switch value is refused before anything is
written."""

from __future__ import annotations

import math

import pytest

from azjax.cli import main
from azjax.train import load_metrics

TINY = ["--num_envs", "8", "--num_simulations", "4", "--moves_per_step", "16", "--replay_size", "256",
        "--min_replay_size", "8", "--batch_size", "8", "--num_blocks", "1", "--num_channels", "8", "--eval_every", "0",
        "--checkpoint_every", "4", "--lr_warmup_steps", "1", "--num_steps", "4", "--temperature_moves", "4",
        "--sgd_steps_per_step", "2"]
SWITCHES = ["--start_state_prob", "0.5", "--archive", "search", "--archive_kind", "reservoir", "--archive_size",
            "128", "--td_lambda", "0.7", "--td_zero_unpredicted", "true", "--full_search_prob", "0.5",
            "--fast_simulations", "2", "--random_opening_plies", "3"]


@pytest.mark.slow
def test_the_methods_train_together_and_report_their_measures(tmp_path):
    run = tmp_path / "run"
    assert main(["train", "--game", "connect_four", "--run_dir", str(run), "--no-progress", *TINY, *SWITCHES]) == 0
    rows, _ = load_metrics(run)
    assert len(rows) == 4
    last = rows[-1]
    assert last["archive_size"] == 128 and sum(r["archive_starts"] for r in rows) > 0  # reservoir: full, drawn from
    assert sum(r["archive_dropped"] for r in rows) == 0
    openings = [r["opening_plies"] for r in rows if r["games"]]
    assert openings and all(0 <= x <= 3 for x in openings) and sum(openings) > 0
    assert math.isclose(last["trajectories_per_learning_step"], last["games"] / 2)
    shares = [r["full_search_share"] for r in rows]
    assert all(0 <= s <= 1 for s in shares) and 0 < sum(shares) < len(shares)
    assert any(r["sgd_applied"] for r in rows) and all(math.isfinite(r["loss"]) for r in rows if r["sgd_applied"])


def test_bad_method_switches_are_refused_clearly(tmp_path, capsys):
    cases = [
        (["--start_state_prob", "0"], "start_state_prob must be in (0, 1]"),
        (["--archive_kind", "ring"], "archive_kind must be one of"),
        (["--td_lambda", "1.5"], "td_lambda must be in [0, 1]"),
        (["--random_opening_plies", "-1"], "random_opening_plies must be >= 0"),
        (["--full_search_prob", "0.5", "--fast_simulations", "4"], "fast_simulations (4) must be below"),
        (["--forced_playouts_k", "2"], "forced_playouts_k > 0 needs search='puct'"),
    ]
    for flags, message in cases:
        run = tmp_path / "bad"
        assert main(["train", "--game", "connect_four", "--run_dir", str(run), "--no-progress", *TINY, *flags]) == 2
        assert message in capsys.readouterr().err
        assert not run.exists()
