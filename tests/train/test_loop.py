"""The loop: replay outcome filling, the loss, one jitted step, checkpoints and resume, sharding."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import replay as rb
from azjax.checkpoint import (
    TRAINER_FILE,
    CheckpointError,
    StateCheckpointer,
    load_params,
    load_portable_state,
    save_params,
    save_portable_state,
)
from azjax.config import preset
from azjax.games import make_game
from azjax.games.chess import Chess
from azjax.methods.alphazero import OutcomeTargets, Seams, TanhValue
from azjax.methods.go_exploit import ArchiveStarts
from azjax.methods.playout_cap import PlayoutCapSearch
from azjax.methods.tdleaf import TDLeafTargets
from azjax.train import METRIC_COLUMNS, load_metrics, train
from azjax.train.loop import Trainer, loss_fn, sgd_unroll
from azjax.train.measures import UNIQUE_STATES_COLUMNS


def test_replay_fills_outcomes_of_ended_games_only():
    b, n = 2, 8
    r = rb.init_replay(n, (1,), jnp.float32, 3)
    obs = jnp.zeros((b, 1))
    pol = jnp.ones((b, 3)) / 3
    # Move 0: slot 0 plays game 0 (player 0 to move), slot 1 plays game 0 (player 1 to move).
    r = rb.write(r, jnp.int32(0), obs, pol, jnp.array([0, 1]), jnp.array([0, 0]))
    # Move 1: players alternate.
    r = rb.write(r, jnp.int32(2), obs, pol, jnp.array([1, 0]), jnp.array([0, 0]))
    # Slot 0's game ends: player 0 won. Slot 1's game goes on.
    r = rb.fill_outcomes(r, jnp.array([True, False]), jnp.array([0, 0]), jnp.array([[1.0, -1.0], [0.0, 0.0]]))
    np.testing.assert_array_equal(r.has_target[:4], [True, False, True, False])
    np.testing.assert_array_equal(r.value[:4], [1.0, 0.0, -1.0, 0.0])
    # Slot 0 starts game 1 at move 2; when slot 1's game 0 ends in a draw, game 1's entries stay open.
    r = rb.write(r, jnp.int32(4), obs, pol, jnp.array([0, 1]), jnp.array([1, 0]))
    r = rb.fill_outcomes(r, jnp.array([False, True]), jnp.array([1, 0]), jnp.array([[0.0, 0.0], [0.0, 0.0]]))
    np.testing.assert_array_equal(r.has_target[:6], [True, True, True, True, False, True])
    # Sampling only returns positions with targets.
    r = rb.fill_outcomes(r, jnp.array([False, False]), jnp.array([1, 0]), jnp.zeros((2, 2)))
    r = r.replace(value=r.value.at[1].set(0.5))
    v = r.value[rb.sample_indices(r.has_target, jax.random.key(0), 256)]
    assert set(np.unique(np.asarray(v))) <= {1.0, -1.0, 0.0, 0.5}
    assert 0.5 in np.asarray(v)


def test_value_targets_mix_outcome_and_the_searchs_q():
    obs, pol = jnp.zeros((2, 3)), jnp.full((2, 2), 0.5)
    r = rb.init_replay(4, (3,), jnp.float32, 2, extras=OutcomeTargets(0.5).records)
    with pytest.raises(ValueError, match="'q'"):
        rb.write(r, jnp.int32(0), obs, pol, jnp.array([0, 1]), jnp.array([0, 0]))
    q = {"q": jnp.array([0.2, -0.6])}
    r = rb.write(r, jnp.int32(0), obs, pol, jnp.array([0, 1]), jnp.array([0, 0]), q)
    r = rb.fill_outcomes(r, jnp.array([True, True]), jnp.array([0, 0]), jnp.array([[1.0, -1.0], [-1.0, 1.0]]))
    idx = jnp.array([0, 1])

    def targets(replay: rb.Replay, w: float) -> jax.Array:
        return OutcomeTargets(w).value_target(replay.value[idx], rb.recorded(replay, idx))

    np.testing.assert_allclose(targets(r, 0.0), [1.0, 1.0])  # z for each entry's player
    np.testing.assert_allclose(targets(r, 1.0), [0.2, -0.6])
    np.testing.assert_allclose(targets(r, 0.25), [0.75 + 0.05, 0.75 - 0.15], rtol=1e-6)
    # A plain replay has no q: its targets are the outcomes whatever the weight.
    plain = rb.fill_outcomes(rb.write(rb.init_replay(4, (3,), jnp.float32, 2), jnp.int32(0), obs, pol,
                                      jnp.array([0, 1]), jnp.array([0, 0])),
                             jnp.array([True, True]), jnp.array([0, 0]), jnp.array([[1.0, -1.0], [-1.0, 1.0]]))
    assert plain.extras == {}
    np.testing.assert_allclose(targets(plain, 0.5), [1.0, 1.0])


@pytest.mark.slow
@pytest.mark.parametrize("targets", [OutcomeTargets, lambda **kw: TDLeafTargets(lam=0.7, **kw)])
def test_q_of_kind_root_is_the_roots_mean_value_and_of_kind_policy_the_policy_targets_value(targets):
    from azjax.methods.alphazero import Searched
    from azjax.search import SearchSpec, network_evaluator, policy_value, run_search

    game = make_game("connect_four")
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 4))
    states = jax.vmap(game.step)(states, jnp.array([3, 2, 6, 0], jnp.int32))
    evaluate = network_evaluator(lambda params, obs: (jnp.zeros((obs.shape[0], 7)), jnp.tanh(obs.sum((1, 2, 3)) - 1)))
    out = run_search(SearchSpec(kind="gumbel", num_simulations=16), game, evaluate, None, jax.random.key(1), states)
    searched = Searched(out=out, policy_target=out.action_weights, trained=jnp.ones(4, bool))
    root = targets(q_weight=0.5, q="root").record(searched, states, out.action)["q"]
    policy = targets(q_weight=0.5, q="policy").record(searched, states, out.action)["q"]
    np.testing.assert_array_equal(root, out.search_tree.node_values[:, 0])
    np.testing.assert_array_equal(policy, policy_value(out.search_tree, out.action_weights))
    assert not np.allclose(root, policy)


@pytest.mark.slow
def test_loop_with_q_mixed_targets_stores_the_searchs_q(tiny_overrides):
    cfg = preset("connect_four", **tiny_overrides, value_target_q_weight=0.5)
    trainer = Trainer(cfg)
    state = trainer.init(0)
    losses = []  # of the steps that ran SGD, as in test_step_plays_writes_and_learns
    for _ in range(12):  # enough moves for games to end and SGD to start, whatever the untrained net plays
        state, m = trainer.step(state)
        if bool(m["sgd_applied"]):
            losses.append(float(m["loss"]))
    replay = state.replay
    written = np.asarray(replay.game_id) >= 0
    q = np.asarray(replay.extras["q"])
    assert written.any() and np.all(np.abs(q) <= 1.0)
    assert np.any(q[written] != 0.0)  # the search's values, not the zeros the replay starts with
    assert losses and np.all(np.isfinite(losses))
    with pytest.raises(ValueError, match="value_target_q_weight"):
        preset("go_7x7", "sai", value_target_q_weight=0.5)


def test_loss_matches_hand_computation():
    logits = jnp.array([[0.0, 0.0], [2.0, 0.0]])
    values = jnp.array([0.5, -0.5])
    apply = lambda params, obs: ((logits, values), {"value_head_active": jnp.float32(0.5)})  # noqa: E731
    params = {"w": jnp.ones((2, 2))}
    policy = jnp.array([[1.0, 0.0], [0.5, 0.5]])
    z = jnp.array([1.0, 1.0])
    total, info = loss_fn(apply, TanhValue(), params, None, policy, z, value_loss_weight=1.0)
    ce = (np.log(2) + (-0.5 * np.log(np.exp(2) / (np.exp(2) + 1)) - 0.5 * np.log(1 / (np.exp(2) + 1)))) / 2
    mse = (0.25 + 2.25) / 2
    np.testing.assert_allclose(info["policy_loss"], ce, rtol=1e-5)
    np.testing.assert_allclose(info["value_loss"], mse, rtol=1e-6)
    np.testing.assert_allclose(total, ce + mse, rtol=1e-5)
    np.testing.assert_allclose(info["l2"], 4.0)
    np.testing.assert_allclose(info["value_std"], 0.5)  # head health: std of v over the batch
    assert float(info["value_head_active"]) == 0.5


@pytest.mark.slow
def test_outcomes_and_q_values_are_from_the_view_of_each_entrys_player_to_move(tiny_overrides):
    """In Connect Four the player who makes a game's last move never loses it: that entry's z is +1 (or 0 for a
    draw), the entry before it (the opponent's) has -z, and where the last mover won, the search that found
    the win valued its root for the mover (q > 0 on average). A flipped sign fails each of these. The
    temperature window counts moves from each trajectory's start."""
    b = 16
    cfg = preset("connect_four", **{**tiny_overrides, "num_envs": b, "replay_size": b * 48, "moves_per_step": 8,
                                    "num_simulations": 16, "value_target_q_weight": 0.5, "sgd_steps_per_step": 0})
    trainer = Trainer(cfg)
    state = trainer.init(0)
    for step in range(5):
        state, m = trainer.step(state)
        assert int(m["unvisited_greedy_moves"]) == 0
        if step == 0:  # every slot's first 4 moves explore, and a game that ended restarts its window
            assert 4 * b <= int(m["window_moves"]) <= 4 * b + 4 * int(m["games"])
    r = jax.tree.map(np.asarray, state.replay)
    last_z, prev_z, last_q = [], [], []
    for slot in range(b):
        rows = np.arange(slot, 40 * b, b)  # this slot's entries in the order they were written
        for game in np.unique(r.game_id[rows]):
            mine = rows[(r.game_id[rows] == game) & r.has_target[rows]]
            if len(mine) < 2:
                continue
            last_z.append(r.value[mine[-1]])
            prev_z.append(r.value[mine[-2]])
            if r.value[mine[-1]] > 0:
                last_q.append(r.extras["q"][mine[-1]])
    last_z, prev_z = np.array(last_z), np.array(prev_z)
    assert len(last_z) >= b and set(last_z) <= {0.0, 1.0} and (last_z == 1.0).any()
    np.testing.assert_array_equal(prev_z, -last_z)
    assert np.mean(last_q) > 0.2, last_q


def test_step_plays_writes_and_learns(tiny_overrides):
    cfg = preset("connect_four", **tiny_overrides)
    trainer = Trainer(cfg)
    state = trainer.init(0)
    params0 = jax.tree.map(np.asarray, state.params)
    losses = []  # of the steps that ran SGD (a step whose replay has too few targets skips it: loss NaN)
    for _ in range(12):
        state, m = trainer.step(state)
        if bool(m["sgd_applied"]):
            losses.append(float(m["loss"]))
    assert int(state.step) == 12 and int(state.moves) == 24
    assert losses and np.all(np.isfinite(losses))
    assert int(m["replay_positions"]) > 0
    # Policy targets are distributions over legal moves; values are outcomes in {-1, 0, 1}.
    replay = state.replay
    done = np.asarray(replay.has_target)
    np.testing.assert_allclose(np.asarray(replay.policy)[done].sum(-1), 1.0, atol=1e-5)
    assert set(np.unique(np.asarray(replay.value)[done])) <= {-1.0, 0.0, 1.0}
    changed = jax.tree.map(lambda a, b: not np.allclose(a, b), params0, jax.tree.map(np.asarray, state.params))
    assert any(jax.tree.leaves(changed))


@pytest.mark.slow
def test_chess_self_play_with_material_adjudication_ends_games_at_the_cap_and_trains_on_material(
        chess_tiny_overrides):
    """Queen odds, adjudicated after 6 plies: every game ends by ply 6, nearly all won by Black (the side a
    queen ahead), and the replay's value targets are those results, not the draws of chess's own 512-ply cap."""
    cfg = preset("chess", **{**chess_tiny_overrides, "start": "queen_odds", "adjudicate_plies": 6,
                             "moves_per_step": 12, "num_steps": 2})
    trainer = Trainer(cfg)
    assert trainer.game.max_moves == 6
    state = trainer.init(0)
    games = first_losses = 0
    for _ in range(cfg.num_steps):
        state, m = trainer.step(state)
        games, first_losses = games + int(m["games"]), first_losses + int(m["first_player_losses"])
        assert int(m["game_length_sum"]) <= 6 * int(m["games"])
    assert games >= 2 * cfg.num_envs and first_losses >= 0.75 * games
    done = np.asarray(state.replay.has_target)
    values = np.asarray(state.replay.value)[done]
    assert done.sum() > 0 and np.mean(np.abs(values) == 1.0) >= 0.75


SWITCHES_OVERRIDES = dict(moves_per_step=16, num_steps=3, replay_size=256)  # games end and SGD runs


@pytest.mark.slow
def test_every_method_at_its_off_values_is_alphazero_bit_for_bit(tiny_overrides):
    """Go-Exploit at lambda = 1 (a search-states archive still filled), TDLeaf at lambda = 1 (its lambda-return
    pass still run) and playout caps at p = 1: the loop's metrics and parameters are AlphaZero's, bit for bit."""
    cfg = preset("connect_four", **{**tiny_overrides, **SWITCHES_OVERRIDES, "value_target_q_weight": 0.5})
    az = Trainer(cfg)
    assert isinstance(az.targets, OutcomeTargets) and isinstance(az.value, TanhValue)
    off = Seams(search=PlayoutCapSearch(az.spec, az.game, az.evaluate, full_prob=1.0, fast_simulations=2),
                value=az.value, starts=ArchiveStarts(az.game, start_state_prob=1.0, population="search"),
                targets=TDLeafTargets(lam=1.0, q_weight=0.5))
    methods = Trainer(dataclasses.replace(az.built, seams=off))  # the same game and network, other seams
    a, b = az.init(0), methods.init(0)
    for _ in range(cfg.num_steps):
        (a, ma), (b, mb) = az.step(a), methods.step(b)
        for k, x in ma.items():
            assert np.asarray(x).tobytes() == np.asarray(mb[k]).tobytes(), k
    assert bool(ma["sgd_applied"]) and int(mb["archive_size"]) > 1 and int(ma["games"]) + int(mb["games"]) > 0
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    np.testing.assert_array_equal(a.replay.value, b.replay.value)


@dataclasses.dataclass(frozen=True)
class _DenseReplayChess(Chess):
    """Chess whose replay keeps what it kept before the compact layout: float32 planes, dense policy rows."""

    policy_width: ClassVar[int | None] = None

    def pack_observation(self, obs: jax.Array) -> jax.Array:
        return obs

    def unpack_observation(self, packed: jax.Array) -> jax.Array:
        return packed


def _dense_replay_trainer(trainer: Trainer) -> Trainer:
    game = trainer.game
    dense = _DenseReplayChess(**{f.name: getattr(game, f.name) for f in dataclasses.fields(game)})
    return Trainer(dataclasses.replace(trainer.built, game=dense))


# Chess adjudicated after 12 plies: games end within the steps, so SGD trains on sampled batches (the golden loop's).
CHESS_TRAINS = {"adjudicate_plies": 12, "sgd_steps_per_step": 2}


@pytest.mark.slow
def test_chess_with_the_compact_replay_trains_as_with_the_dense_replay_bit_for_bit(chess_tiny_overrides):
    """Packed planes and sparse policy targets unpack to the batches the float32, dense replay gave: the loop's
    metrics and trained parameters are the same, byte for byte."""
    compact = Trainer(preset("chess", **{**chess_tiny_overrides, **CHESS_TRAINS}))
    dense = _dense_replay_trainer(compact)
    a, b = compact.init(0), dense.init(0)
    assert isinstance(a.replay.policy, rb.SparsePolicy) and not isinstance(b.replay.policy, rb.SparsePolicy)
    applied = 0
    for _ in range(compact.config.num_steps):
        (a, ma), (b, mb) = compact.step(a), dense.step(b)
        for k, x in ma.items():
            assert np.asarray(x).tobytes() == np.asarray(mb[k]).tobytes(), k
        applied += int(ma["sgd_applied"])
    assert applied >= 2
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


@pytest.mark.slow
def test_a_chess_run_resumes_with_the_compact_replay_and_refuses_a_checkpoint_of_the_dense_one(
        tmp_path, chess_tiny_overrides):
    cfg = preset("chess", **{**chess_tiny_overrides, **CHESS_TRAINS, "checkpoint_every": 2})
    train(cfg, tmp_path / "full", progress=False)
    train(cfg, tmp_path / "cut", progress=False, stop_after=2)
    assert train(None, tmp_path / "cut", resume=True, progress=False)["finished"]
    assert (tmp_path / "full" / "params.msgpack").read_bytes() == (tmp_path / "cut" / "params.msgpack").read_bytes()
    # A loop checkpoint of the layout before (float32 planes, dense policies) does not resume; its params load.
    trainer = Trainer(cfg)
    old = _dense_replay_trainer(trainer).init(0)
    saver = StateCheckpointer(tmp_path / "old")
    saver.save(2, old)
    with pytest.raises(CheckpointError, match="holds .* arrays, the config needs"):
        saver.restore(2, trainer.init(0))
    save_params(tmp_path / "old", old.params)
    restored = load_params(tmp_path / "old", trainer.init(0).params)
    for x, y in zip(jax.tree.leaves(restored), jax.tree.leaves(old.params), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


DETERMINISTIC = METRIC_COLUMNS + UNIQUE_STATES_COLUMNS  # Connect Four counts its distinct positions


def _deterministic(rows):
    return [{k: r[k] for k in DETERMINISTIC} for r in rows]


@pytest.mark.slow
def test_resume_gives_the_same_metrics(tmp_path, tiny_overrides):
    # Games end and SGD runs from the second step: the checkpoint resumed from holds an optimizer state that moved.
    cfg = preset("connect_four", **{**tiny_overrides, "num_steps": 6, "checkpoint_every": 2, "moves_per_step": 8,
                                    "sgd_steps_per_step": 2})
    train(cfg, tmp_path / "full", progress=False)
    # Stop after 3 steps (a checkpoint is written at the stop), then resume to the end.
    train(cfg, tmp_path / "cut", progress=False, stop_after=3)
    summary = train(None, tmp_path / "cut", resume=True, progress=False)
    assert summary["finished"]
    full, _ = load_metrics(tmp_path / "full")
    cut, _ = load_metrics(tmp_path / "cut")
    assert len(full) == len(cut) == 6
    assert any(float(r["sgd_applied"]) > 0 for r in full[:3]), "no SGD before the stop: nothing moved to restore"
    assert (tmp_path / "full" / "params.msgpack").read_bytes() == (tmp_path / "cut" / "params.msgpack").read_bytes()
    a, b = _deterministic(full), _deterministic(cut)
    for ra, rb_ in zip(a, b, strict=True):
        for k in DETERMINISTIC:
            x, y = ra[k], rb_[k]
            assert (x == y) or (isinstance(x, float) and np.isnan(x) and np.isnan(y)), (k, x, y)
    assert (tmp_path / "cut" / "curves.png").exists()


def test_the_portable_state_carries_weights_optimizer_and_counters_and_leaves_the_replay_fresh(
        tmp_path, tiny_overrides):
    cfg = preset("connect_four", **{**tiny_overrides, "num_steps": 3})
    trainer = Trainer(cfg)
    state = trainer.init(cfg.seed)
    for _ in range(3):
        state, _ = trainer.step(state)
    save_portable_state(tmp_path, state)
    fresh = trainer.init(cfg.seed + 1)
    restored = load_portable_state(tmp_path, fresh)
    assert int(restored.step) == 3 and int(restored.moves) == int(state.moves)
    for x, y in zip(jax.tree.leaves((restored.params, restored.opt_state, restored.key)),
                    jax.tree.leaves((state.params, state.opt_state, state.key)), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    for x, y in zip(jax.tree.leaves((restored.replay, restored.actors)), jax.tree.leaves((fresh.replay, fresh.actors)),
                    strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    # Another network's state is refused in one line, naming the file; a damaged file too.
    other = Trainer(cfg.replace(num_channels=cfg.num_channels * 2))
    with pytest.raises(CheckpointError, match=r"trainer.msgpack does not match the run's config: .*shape"):
        load_portable_state(tmp_path, other.init(0))
    (tmp_path / TRAINER_FILE).write_bytes(b"\x00not msgpack")
    with pytest.raises(CheckpointError, match="trainer.msgpack is corrupt"):
        load_portable_state(tmp_path, fresh)


@pytest.mark.slow
def test_a_run_resumes_from_its_portable_state_alone_as_a_committed_run_directory_would(tmp_path, tiny_overrides):
    cfg = preset("connect_four", **{**tiny_overrides, "num_steps": 6, "checkpoint_every": 2, "moves_per_step": 8,
                                    "sgd_steps_per_step": 2})
    train(cfg, tmp_path / "run", progress=False, stop_after=3)
    saved = (tmp_path / "run" / "params.msgpack").read_bytes()
    # What a session commits: the config, the logs and the portable state; the orbax checkpoints stay behind.
    committed = tmp_path / "committed"
    committed.mkdir()
    for name in ("config.json", "metrics.csv", TRAINER_FILE, "params.msgpack"):
        (committed / name).write_bytes((tmp_path / "run" / name).read_bytes())
    trainer = Trainer(cfg)
    assert np.asarray(load_portable_state(committed, trainer.init(0)).step) == 3
    summary = train(None, committed, resume=True, progress=False)
    assert summary["finished"]
    rows, _ = load_metrics(committed)
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4, 5, 6]
    assert (committed / "params.msgpack").read_bytes() != saved  # it trained on from step 3


@pytest.mark.slow
def test_resume_with_mismatched_config_fails_clearly(tmp_path, tiny_overrides):
    cfg = preset("connect_four", **{**tiny_overrides, "num_steps": 2})
    train(cfg, tmp_path / "run", progress=False)
    with pytest.raises(CheckpointError, match="num_simulations: saved 4, given 8"):
        train(cfg.replace(num_simulations=8), tmp_path / "run", resume=True, progress=False)
    with pytest.raises(CheckpointError, match="already holds a run"):
        train(cfg, tmp_path / "run", progress=False)
    # Nothing saved was touched.
    assert (tmp_path / "run" / "params.msgpack").exists()


def test_corrupt_or_mismatched_params_are_rejected(tmp_path, tiny_overrides):
    cfg = preset("connect_four", **{**tiny_overrides, "num_steps": 2})
    train(cfg, tmp_path / "run", progress=False)
    trainer = Trainer(cfg)
    params = trainer.init(0).params
    load_params(tmp_path / "run", params)  # loads
    bigger = Trainer(cfg.replace(num_channels=16)).init(0).params
    with pytest.raises(CheckpointError, match="does not match"):
        load_params(tmp_path / "run", bigger)
    (tmp_path / "run" / "params.msgpack").write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_params(tmp_path / "run", params)


SHARDED = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    import jax, numpy as np
    from azjax.config import preset
    from azjax.train.loop import Trainer
    assert jax.device_count() == 4
    cfg = preset("connect_four", num_envs=8, num_simulations=4, moves_per_step=4, replay_size=512,
                 min_replay_size=8, batch_size=8, sgd_steps_per_step=1, num_blocks=1, num_channels=8,
                 eval_every=0, lr_warmup_steps=1, num_steps=8)
    tr = Trainer(cfg)
    s = tr.init(0)
    for _ in range(8):
        s, m = tr.step(s)
    assert bool(m["sgd_applied"]) and np.isfinite(float(m["loss"])), m
    # Games and replay are split over the 4 devices; parameters are replicated and identical.
    assert len(s.replay.value.sharding.device_set) == 4
    shards = [np.asarray(x.data) for x in jax.tree.leaves(s.params)[0].addressable_shards]
    assert all(np.array_equal(shards[0], x) for x in shards[1:])
    boards = [np.asarray(x.data) for x in s.actors.state.env._x.board.addressable_shards]
    assert not all(np.array_equal(boards[0], b) for b in boards[1:]), "devices played identical games"
    print("OK", float(m["loss"]))
""")


@pytest.mark.slow
def test_sgd_steps_unroll_on_cpus_and_stay_rolled_on_accelerators():
    # CPUs: convolution gradients inside a while loop run ~10x slower; GPUs: each unrolled copy compiles anew.
    assert sgd_unroll(jax.devices("cpu")[0]) is True
    assert sgd_unroll(type("Device", (), {"platform": "gpu"})()) == 1
    assert sgd_unroll(type("Device", (), {"platform": "tpu"})()) == 1


def test_sharded_step_on_four_cpu_devices():
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK" in proc.stdout


@pytest.mark.slow
def test_the_weight_average_follows_the_trained_weights_and_is_what_the_run_gives_out(tmp_path, tiny_overrides):
    cfg = preset("connect_four", **{**tiny_overrides, **SWITCHES_OVERRIDES, "swa_decay": 0.75})
    trainer = Trainer(cfg)
    state = trainer.init(0)
    expected = jax.tree.map(np.asarray, state.params)  # the average starts at the initial weights
    for _ in range(cfg.num_steps):
        state, _ = trainer.step(state)
        expected = jax.tree.map(lambda a, p: 0.75 * a + 0.25 * np.asarray(p), expected, state.params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7), expected, state.params_average)
    assert state.exported_params is state.params_average
    assert Trainer(cfg.replace(swa_decay=0.0)).init(0).params_average is None  # off: AlphaZero's state

    train(cfg, tmp_path / "run", progress=False)
    exported = load_params(tmp_path / "run", state.params)
    from azjax.train import params_at_step

    at_end = params_at_step(tmp_path / "run", cfg.num_steps)
    jax.tree.map(np.testing.assert_array_equal, exported, jax.tree.map(np.asarray, at_end))
    trained = Trainer(cfg).init(0)  # a fresh state: its params are not the exported average
    assert any(jax.tree.leaves(jax.tree.map(lambda a, b: not np.allclose(a, b), exported, trained.params)))


@pytest.mark.slow
def test_sai_logs_the_empty_board_read_out_of_the_averaged_weights(sai_tiny_overrides):
    cfg = preset("go_7x7", "sai", **{**sai_tiny_overrides, "swa_decay": 0.5})
    trainer = Trainer(cfg)
    state = trainer.init(0)
    for _ in range(7):  # games end and SGD runs
        state, _ = trainer.step(state)
    averaged = trainer.starts.empty_board_sigmoid(state.params_average)
    trained = trainer.starts.empty_board_sigmoid(state.params)
    _, m = trainer.step(state)
    assert float(m["empty_board_black_lead"]) == pytest.approx(float(averaged[0]), rel=1e-5)
    assert abs(float(averaged[0]) - float(trained[0])) > 1e-4
