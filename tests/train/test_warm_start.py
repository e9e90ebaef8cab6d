"""`--init_from MODEL`: a run starts from another model's weights, layer by layer where the shapes agree, across
Go board sizes too; off (the default) the run is the same as before."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from azjax.build import load_model
from azjax.checkpoint import export_model
from azjax.cli import main
from azjax.config import preset
from azjax.train import train
from azjax.train.loop import Trainer
from azjax.train.warm_start import load_source, warm_start

TINY = dict(num_envs=8, num_simulations=4, moves_per_step=16, replay_size=256, min_replay_size=8, batch_size=8,
            sgd_steps_per_step=1, num_blocks=1, num_channels=8, eval_every=0, log_every=1, checkpoint_every=2,
            lr_warmup_steps=1, num_steps=2, temperature_moves=4)


@pytest.fixture(scope="module")
def model_7x7(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("warm")
    train(preset("go_7x7", **TINY), root / "run", progress=False)
    return export_model(root / "run", root / "model")


def _flat(params) -> dict[str, np.ndarray]:  # noqa: ANN001
    return {"/".join(str(getattr(k, "key", k)) for k in path): np.asarray(x)
            for path, x in jax.tree_util.tree_flatten_with_path(params)[0]}


@pytest.mark.slow
def test_a_9x9_network_takes_the_7x7_trunk_and_head_convolutions_and_keeps_fresh_dense_layers(model_7x7):
    config = preset("go_9x9", **TINY, init_from=str(model_7x7))
    fresh = Trainer(config).init(0).params
    params, report = warm_start(jax.device_get(fresh), load_source(config), config.init_from)
    source, mine, before = _flat(load_model(model_7x7)[1]), _flat(params), _flat(fresh)
    assert report.copied and report.fresh
    for path in report.copied:
        np.testing.assert_array_equal(mine[path], source[path])
    for path in report.fresh:  # the dense layers that read the flattened board: 81 points, not 49
        np.testing.assert_array_equal(mine[path], before[path])
        assert "Dense" in path
    assert any("ResBlock_0" in p for p in report.copied) and any("policy_head" in p for p in report.copied)


@pytest.mark.slow
@pytest.mark.parametrize("swa_decay", [0.0, 0.99])
def test_a_warm_started_run_begins_with_the_models_trunk_and_says_what_it_copied(model_7x7, tmp_path, capsys,
                                                                                 swa_decay):
    """With weight averaging the average starts at the copied weights too, in buffers of its own (the step donates
    both: given the same buffers twice, the first step failed)."""
    run = tmp_path / "run9"
    assert main(["train", "--game", "go_9x9", "--preset", "quick", *[f"--{k}={v}" for k, v in TINY.items()],
                 "--num_steps", "2", "--swa_decay", str(swa_decay), "--init_from", str(model_7x7),
                 "--run_dir", str(run)]) == 0
    assert "warm start from" in capsys.readouterr().out
    assert len((run / "metrics.csv").read_text().strip().splitlines()) == 1 + 2


def test_a_missing_model_or_another_trunk_is_refused_in_one_line_and_writes_nothing(model_7x7, tmp_path, capsys):
    run = tmp_path / "run"
    flags = ["train", "--game", "go_9x9", "--preset", "quick", *[f"--{k}={v}" for k, v in TINY.items()]]
    assert main([*flags, "--init_from", str(tmp_path / "nowhere"), "--run_dir", str(run)]) == 2
    assert main([*flags, "--num_channels", "16", "--init_from", str(model_7x7), "--run_dir", str(run)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 2 and "nowhere" in errors[0]
    assert "trunk differs" in errors[1]
    assert not run.exists()
