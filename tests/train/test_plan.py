"""`azjax plan`: the memory a run holds per device, known from shapes before anything compiles."""

from __future__ import annotations

import dataclasses
import json

import jax
import pytest

from azjax.config import PRESETS, preset
from azjax.train.loop import Trainer
from azjax.train.plan import (
    MemoryPlanError,
    check_fits,
    compiled_memory,
    per_device_config,
    plan,
    render,
)


@pytest.mark.slow
@pytest.mark.parametrize("game", ["connect_four", "go_9x9", "chess"])
def test_the_estimate_from_shapes_is_within_a_quarter_of_xlas_memory_analysis(game: str) -> None:
    # Scaled down so each compiles in seconds; the replay, tree and SGD batch are each a real share.
    small = dict(num_envs=8, num_simulations=4, moves_per_step=2, replay_size=2048, min_replay_size=32,
                 batch_size=32, sgd_steps_per_step=1, num_blocks=1, num_channels=16, eval_every=0)
    config = preset(game, "quick", **small)
    trainer = Trainer(config, devices=jax.devices()[:1])
    estimate = plan(config, trainer=trainer).bytes_per_device
    xla, _ = compiled_memory(trainer)
    assert 0.75 * xla <= estimate <= 1.25 * xla, f"{game}: estimate {estimate} against XLA's {xla} bytes"


def test_the_parts_add_up_and_scale_with_the_fields_that_make_them() -> None:
    base = preset("go_9x9", "quick", num_envs=16, replay_size=4096, batch_size=64, num_blocks=1, num_channels=8)
    p = plan(base)
    assert p.bytes_per_device == p.state_bytes + p.tree_bytes + p.sgd_bytes
    assert 0 < p.replay_bytes < p.state_bytes
    bigger_replay = plan(base.replace(replay_size=8192))
    assert bigger_replay.replay_bytes == 2 * p.replay_bytes
    assert plan(base.replace(num_simulations=2 * base.num_simulations + 1)).tree_bytes > 1.9 * p.tree_bytes
    assert plan(base.replace(batch_size=128)).sgd_bytes > 1.9 * p.sgd_bytes
    assert p.positions_per_step == 16 * base.moves_per_step
    assert p.replay_ratio == base.sgd_steps_per_step * 64 / (16 * base.moves_per_step)


def test_a_device_holds_its_share_of_games_replay_and_batch() -> None:
    config = preset("connect_four", "quick")
    share = per_device_config(config, 4)
    assert (share.num_envs, share.batch_size, share.replay_size) == (64, 128, 16384)
    with pytest.raises(ValueError, match="num_envs=256 is not divisible by the 3 devices"):
        per_device_config(config, 3)


def test_a_run_too_large_for_the_device_is_refused_naming_the_fields_to_lower() -> None:
    config = preset("chess", "quick", num_blocks=1, num_channels=8, replay_size=2**20, num_envs=8, batch_size=8)
    p = plan(config)
    check_fits(p, device_bytes=int(2 * p.bytes_per_device))  # fits: no error
    with pytest.raises(MemoryPlanError) as refused:
        check_fits(p, device_bytes=p.bytes_per_device)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("the run needs about")
    assert message.index("replay_size (1048576)") < message.index("batch_size (8)")  # the replay dominates
    check_fits(p, device_bytes=None)  # memory unknown: nothing to refuse


def test_the_plan_says_which_common_devices_it_fits() -> None:
    p = plan(preset("connect_four", "quick", num_blocks=1, num_channels=8))
    text = render(p, this_machine=("this machine", 10**12))
    assert "replay ratio 4.00" in text  # 16 SGD steps of 512 per 256 games x 8 moves
    for device in ("T4 16 GB (Colab)", "A100 40 GB", "H100 80 GB", "TPU v4 32 GB", "this machine"):
        assert device in text
    assert " no " not in text  # a tiny run fits everywhere
    huge = dataclasses.replace(p, runs=10**6)
    assert "T4 16 GB (Colab)             no" in render(huge)


GPU_PRESETS = [(game, "full") for game in sorted(PRESETS)] + [("go_7x7", "sai_full"), ("go_9x9", "loan")]


@pytest.mark.slow
@pytest.mark.parametrize(("game", "name"), GPU_PRESETS)
def test_every_gpu_preset_traces_and_lowers_on_the_cpu(game: str, name: str) -> None:
    """A shape or dtype error in a preset sized for a GPU fails here, without a GPU and without compiling."""
    trainer = Trainer(preset(game, name), devices=jax.devices()[:1])
    lowered = trainer.lower_step()
    assert "stablehlo" in lowered.as_text()[:10_000] or "func.func" in lowered.as_text()[:10_000]


def test_train_refuses_a_replay_too_large_for_this_machine_before_compiling_and_writes_nothing(tmp_path, capsys):
    from azjax.cli import main

    run_dir = tmp_path / "run"
    # 2**30 chess positions of 8x8x119 float32 planes: about 30 TB, more than any machine here has.
    status = main(["train", "--game", "chess", "--preset", "quick", "--num_blocks", "1", "--num_channels", "8",
                   "--replay_size", str(2**30), "--run_dir", str(run_dir)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 2 and err[0].startswith("JAX compilation cache")  # the cache line, then one error line
    assert "needs about" in err[1] and "lower replay_size (1073741824)" in err[1]
    assert not run_dir.exists()


@pytest.mark.parametrize("game", sorted(PRESETS))
def test_azjax_plan_prints_every_full_preset_and_the_devices_it_fits(game: str, tmp_path, capsys) -> None:
    from azjax.cli import main

    out = tmp_path / "plan.json"
    assert main(["plan", "--game", game, "--preset", "full", "--devices", "8", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "H100 80 GB" in text and "T4 16 GB (Colab)" in text and "this machine" in text
    record = json.loads(out.read_text())
    assert record["num_devices"] == 8 and record["config"]["game"] == game
    assert record["bytes_per_device"] == record["state_bytes"] + record["tree_bytes"] + record["sgd_bytes"]


def test_the_chess_full_presets_replay_holds_at_most_3_gib() -> None:
    """Packed planes and sparse policy targets (`Game.pack_observation`, `Game.policy_width`): 9.1 GiB of float32
    planes and dense policy rows before, for the preset's 200,000 positions."""
    config = preset("chess", "full")
    p = plan(config)
    assert config.replay_size == 200_000
    assert p.replay_bytes <= 3 * 2**30, p.replay_bytes / 2**30
