"""Host-side run measures: the exact count of distinct positions self-play visited."""

from __future__ import annotations

import numpy as np
import pytest

from azjax.config import preset
from azjax.train import load_metrics, train
from azjax.train.loop import Trainer
from azjax.train.measures import UniqueStates, count_written, written_rows


def test_unique_states_count_each_position_once_at_its_depth(tmp_path):
    empty = np.zeros((6, 7, 2), bool)
    one = empty.copy()
    one[5, 3, 0] = True
    two = one.copy()
    two[5, 2, 1] = True
    unique = UniqueStates()
    assert unique.add(np.stack([empty, one, one])) == 2
    assert unique.add(np.stack([two, empty])) == 1
    assert unique.total == 3 and unique.by_depth() == [1, 1, 1]
    unique.save(tmp_path, step=7)
    again = UniqueStates.load(tmp_path, 7)
    assert again.step == 7 and again.seen == unique.seen and again.by_depth() == [1, 1, 1]
    # One file a checkpoint step, the newest three kept, so a resume from any kept checkpoint finds its own.
    for step in (8, 9, 10):
        unique.add(np.stack([two]))
        unique.save(tmp_path, step=step)
    assert UniqueStates.load(tmp_path, 7) is None and UniqueStates.load(tmp_path, 8).step == 8


def test_written_rows_follow_each_devices_replay_ring():
    # 4 games a device, 8 entries a device, 2 devices: moves 1 and 2 wrote local entries 4-7 and 0-3.
    rows = written_rows(1, 3, num_envs=4, replay_size=8, num_devices=2)
    np.testing.assert_array_equal(rows, [4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11])


def test_the_count_equals_the_distinct_positions_in_the_replay(tiny_overrides):
    cfg = preset("connect_four", **{**tiny_overrides, "replay_size": 64})
    trainer = Trainer(cfg)
    state = trainer.init(0)
    unique = UniqueStates()
    for step in range(1, 4):  # 3 steps x 2 moves x 8 games = 48 positions, all still in the 64-entry ring
        state, _ = trainer.step(state)
        count_written(unique, state.replay.obs, (step - 1) * cfg.moves_per_step, step * cfg.moves_per_step,
                      cfg.num_envs, cfg.replay_size, 1)
    written = np.asarray(state.replay.obs[:48]).reshape(48, -1)
    assert unique.total == len(np.unique(written, axis=0))
    assert sum(unique.by_depth()) == unique.total and unique.by_depth()[0] == 1  # one empty board


@pytest.mark.slow
def test_a_run_logs_distinct_positions_and_value_losses(tmp_path, tiny_overrides):
    cfg = preset("connect_four", **{**tiny_overrides, "num_steps": 2, "eval_every": 2, "eval_games": 2,
                                    "eval_simulations": 2, "eval_opponent_simulations": 2, "value_probe_games": 2})
    train(cfg, tmp_path / "run", progress=False)
    rows, _ = load_metrics(tmp_path / "run")
    counts = [r["unique_states"] for r in rows]
    assert 0 < counts[0] <= counts[1]
    assert np.isnan(rows[0]["value_loss_visited"]) and np.isfinite(rows[1]["value_loss_visited"])
    assert np.isfinite(rows[1]["value_loss_search"])
    assert (tmp_path / "run" / "unique_states.json").exists()


def test_a_log_written_before_a_column_existed_is_rewritten_under_the_new_header(tmp_path):
    from azjax.train.run_dir import METRIC_COLUMNS, TIMING_COLUMNS, RunLog

    old = METRIC_COLUMNS + TIMING_COLUMNS
    (tmp_path / "metrics.csv").write_text(",".join(old) + "\n" + ",".join("1" for _ in old) + "\n")
    log = RunLog(tmp_path, columns=METRIC_COLUMNS + ["unique_states"])
    log.add({**{c: 2 for c in METRIC_COLUMNS + TIMING_COLUMNS}, "unique_states": 5})
    rows, _ = load_metrics(tmp_path)
    assert [r["step"] for r in rows] == [1.0, 2.0]
    assert rows[0]["unique_states"] == "" and rows[1]["unique_states"] == 5.0
