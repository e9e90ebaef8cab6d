"""Leela Chess Zero's moves-left head (azjax.methods.moves_left): each position's target is the plies its game went
on for, across the replay's ring; the search's values move toward shorter wins and longer losses by lc0's rule,
relative to the root's expectation; the head learns what a constant cannot; the loop and the command line train
it; and off (the default) is AlphaZero, with no head, no per-game record and no term."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import fit_auxiliary_heads

from azjax import replay as rb
from azjax.build import board_game, init_params, load_model, make_evaluator, make_network, value_head
from azjax.cli import main
from azjax.config import Config, preset
from azjax.engines.engine import Engine
from azjax.engines.lc0 import format_table
from azjax.games import make_game, where_games
from azjax.methods.alphazero import NoAuxiliaryTargets, TanhValue
from azjax.methods.katago_aux import AuxiliaryValue
from azjax.methods.moves_left import (
    LC0_MAX_EFFECT,
    LC0_SLOPE,
    MovesLeftContext,
    MovesLeftTargets,
    MovesLeftValue,
    moves_left_utility,
)
from azjax.methods.wdl import WinDrawLossValue
from azjax.network import with_moves_left
from azjax.search import ParentAwareEvaluator
from azjax.train import load_metrics
from azjax.train.loop import Trainer

ON = dict(moves_left_loss_weight=0.1)


def test_each_position_is_given_the_plies_its_game_went_on_for_across_the_ring():
    b, n = 2, 8  # 4 rows per slot
    aux = MovesLeftTargets()
    r = rb.init_replay(n, (1,), jnp.float32, 3, finals=aux.finals, num_slots=b)
    obs, pol, players = jnp.zeros((b, 1)), jnp.full((b, 3), 1 / 3), jnp.array([0, 1])

    def move(r: rb.Replay, row: int, game_id: list[int], ended: list[bool]) -> rb.Replay:
        ptr = jnp.int32(row * b)
        r = rb.write(r, ptr, obs, pol, players, jnp.array(game_id))
        return aux.game_ended(r, ptr, jnp.array(ended), jnp.array(game_id), None)

    # Slot 0: game 0 is rows 0-2 (ends on its third move), game 1 rows 3, 0 (wrapped). Slot 1: game 0 is rows 0-4.
    r = move(r, 0, [0, 0], [False, False])
    r = move(r, 1, [0, 0], [False, False])
    r = move(r, 2, [0, 0], [True, False])
    got = aux.sample(r, jnp.array([0, 2, 4]))["moves_left"]  # slot 0's rows 0, 1, 2
    np.testing.assert_array_equal(got, [3.0, 2.0, 1.0])
    r = move(r, 3, [1, 0], [False, False])
    r = move(r, 0, [1, 0], [True, True])  # the ring wraps: row 0 again, slot 1's game 0 ends after 5 moves
    np.testing.assert_array_equal(aux.sample(r, jnp.array([6, 0]))["moves_left"], [2.0, 1.0])  # slot 0, game 1
    # Slot 1's rows 1, 2, 3, 0 hold its last four moves (the first was overwritten).
    np.testing.assert_array_equal(aux.sample(r, jnp.array([3, 5, 7, 1]))["moves_left"], [4.0, 3.0, 2.0, 1.0])


def test_the_search_value_favours_shorter_wins_and_longer_losses_by_lc0s_rule():
    v = jnp.array([0.8, 0.8, -0.8, -0.8, 0.0, 1.0, 1.0])
    extra = jnp.array([10.0, -10.0, 10.0, -10.0, 10.0, 1000.0, -1000.0])
    got = np.asarray(moves_left_utility(v, extra, LC0_SLOPE, LC0_MAX_EFFECT))
    assert got[0] < 0.8 < got[1]  # a win that takes longer than the root expects is worth less, a quicker one more
    assert got[2] > -0.8 > got[3]  # a loss that takes longer is worth more to the side losing
    assert got[4] == 0.0  # an even position is left alone
    np.testing.assert_allclose(got[5:], [1.0 - LC0_MAX_EFFECT, 1.0 + LC0_MAX_EFFECT], rtol=1e-6)  # capped, f(1) = 1
    f = 1.6521 * 0.8 - 0.6521 * 0.64
    np.testing.assert_allclose(got[0], 0.8 - f * LC0_SLOPE * 10, rtol=1e-6)


def test_a_node_is_judged_by_its_depth_and_prediction_against_the_roots():
    """A fake network whose moves-left prediction is the observation's number and whose value is 0.5: the root
    keeps its value, and a child d plies down is moved by d + m - m_root."""
    def fake_apply(params, obs):  # noqa: ANN001, ANN202
        return (jnp.zeros((obs.shape[0], 3)), jnp.full((obs.shape[0],), 0.5)), obs[:, 0]

    value = MovesLeftValue(inner=TanhValue(), moves_left_apply=lambda apply_fn: fake_apply)
    evaluate = value.evaluator(None)
    assert isinstance(evaluate, ParentAwareEvaluator)

    class States:  # the evaluator reads the observation only
        def __init__(self, m: list[float]) -> None:
            self.observation = jnp.array(m)[:, None]

    _, root_value, context = evaluate.root(None, States([40.0, 40.0]))
    np.testing.assert_array_equal(root_value, [0.5, 0.5])
    np.testing.assert_array_equal(context.depth, [0, 0])
    _, child_value, child_context = evaluate.child(None, States([39.0, 20.0]), context)  # 1 + 39 - 40 = 0; -20
    np.testing.assert_allclose(child_value, moves_left_utility(jnp.array([0.5, 0.5]), jnp.array([0.0, -19.0]),
                                                               LC0_SLOPE, LC0_MAX_EFFECT))
    assert child_value[0] == 0.5 and child_value[1] > 0.5
    np.testing.assert_array_equal(child_context.depth, [1, 1])
    np.testing.assert_array_equal(child_context.root_moves_left, [40.0, 40.0])
    # max_effect 0: the head trains, the search reads the inner head alone
    assert not isinstance(MovesLeftValue(TanhValue(), lambda f: fake_apply, max_effect=0.0).evaluator(lambda p, o: o),
                          ParentAwareEvaluator)
    assert isinstance(MovesLeftContext(jnp.zeros(1), jnp.zeros(1)), tuple)


def stones_batch(n: int) -> tuple[jax.Array, jax.Array]:
    """n Connect Four positions after 0-30 random moves, with 42 - stones as the target: plies a network can
    read off its input, different from position to position."""
    game = make_game("connect_four")
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(3), n))
    plies = jax.random.randint(jax.random.key(4), (n,), 0, 31)

    def move(i, s):  # noqa: ANN001, ANN202
        logits = jnp.where(s.legal_action_mask, 0.0, -jnp.inf)
        nxt = jax.vmap(game.step)(s, jax.random.categorical(jax.random.fold_in(jax.random.key(5), i), logits))
        return where_games((i < plies) & ~nxt.terminated, nxt, s)

    states = jax.jit(lambda s: jax.lax.fori_loop(0, 30, move, s))(states)
    stones = states.observation[..., :2].sum(axis=(1, 2, 3))
    return states.observation, (42.0 - stones).astype(jnp.float32)


@pytest.mark.slow
def test_the_head_learns_plies_that_no_constant_output_meets():
    """Some steps of the real optimizer on a fixed batch bring the head's error in plies well below the best
    constant's (the targets' mean absolute deviation from their median): a constant head fails this."""
    n = 64
    obs, target = stones_batch(n)
    t = np.asarray(target, np.float64)
    best_constant_error = float(np.mean(np.abs(t - np.median(t))))
    assert best_constant_error > 5  # the batch's targets vary
    config = preset("connect_four", num_blocks=1, num_channels=16, learning_rate=3e-3, lr_warmup_steps=1,
                    num_steps=200, sgd_steps_per_step=1, weight_decay=0.0, moves_left_loss_weight=1.0)
    _, last = fit_auxiliary_heads(config, obs, MovesLeftTargets(weight=1.0), {"moves_left": target}, steps=200)
    assert float(last["moves_left_error"]) < 0.3 * best_constant_error, (float(last["moves_left_error"]),
                                                                        best_constant_error)
    assert float(last["moves_left_std"]) > 3.0 and 0.1 < float(last["moves_left_head_active"]) < 0.9


@pytest.mark.slow
def test_a_tiny_loop_trains_the_head_from_the_command_line_and_its_targets_are_the_games_own_lengths(
        tmp_path, tiny_overrides):
    """`--moves_left_loss_weight 0.1` on Connect Four: metrics.csv shows the head's loss and health, the saved
    model searches with the adjusted values, and in the loop's replay a position's plies left plus the stones on
    its board is its game's length (Connect Four adds one stone a ply)."""
    tiny = {**tiny_overrides, "moves_per_step": 16, "replay_size": 256}
    run = tmp_path / "run"
    flags = [f"--{k}={v}" for k, v in {**tiny, **ON}.items()]
    assert main(["train", "--game", "connect_four", "--run_dir", str(run), "--no-progress", *flags]) == 0
    rows, _ = load_metrics(run)
    trained = [r for r in rows if r["sgd_applied"]]
    assert trained
    for r in trained:
        assert all(math.isfinite(r[k]) for k in ("moves_left_loss", "moves_left_error", "moves_left_std"))
        assert r["moves_left_std"] > 0 and 0 < r["moves_left_head_active"] < 1
    config, params = load_model(run)
    assert config.moves_left_loss_weight == 0.1 and "moves_left_head" in params["params"]
    evaluate = make_evaluator(config, board_game(config))
    assert isinstance(evaluate, ParentAwareEvaluator)
    states = jax.vmap(board_game(config).init)(jax.random.split(jax.random.key(0), 2))
    logits, value = evaluate(params, states)
    assert logits.shape == (2, 7) and value.shape == (2,)
    engine = Engine.from_checkpoint(str(run), visits=8)  # the engines show the root's prediction, as lc0
    result = engine.search()
    assert result.net_moves_left is not None and result.net_moves_left > 0
    assert format_table(result)[-1].endswith(f"(M: {result.net_moves_left:.1f})")

    trainer = Trainer(preset("connect_four", **tiny, **ON))
    assert isinstance(trainer.auxiliary, MovesLeftTargets) and isinstance(trainer.value, AuxiliaryValue)
    state = trainer.init(0)
    for _ in range(tiny["num_steps"]):
        state, _ = trainer.step(state)
    replay = state.replay
    idx = jnp.flatnonzero(replay.has_target)
    assert idx.size > 0
    plies_left = np.asarray(trainer.auxiliary.sample(replay, idx)["moves_left"])
    stones = np.asarray(replay.obs[idx][..., :2].sum(axis=(1, 2, 3)))
    length = plies_left + stones
    assert (plies_left >= 1).all() and (length >= 7).all() and (length <= 42).all()
    assert (plies_left == 1).any() and len(set(length.tolist())) > 1
    # each game's positions agree on its length
    game_of = np.asarray(replay.game_id[idx]) * 1000 + np.asarray(idx) % tiny["num_envs"]
    for g in np.unique(game_of):
        assert len(set(length[game_of == g].tolist())) == 1


def test_off_by_default_alphazero_with_no_head_record_or_term(tiny_overrides):
    assert Config().moves_left_loss_weight == 0.0
    old = Config(game="connect_four").to_dict()
    for name in ("moves_left_loss_weight", "moves_left_slope", "moves_left_max_effect"):
        del old[name]
    assert Config.from_dict(old).moves_left_loss_weight == 0.0  # saved before the head existed: off
    trainer = Trainer(preset("connect_four", **tiny_overrides))
    assert isinstance(trainer.auxiliary, NoAuxiliaryTargets) and type(trainer.value) is TanhValue
    assert trainer.net.moves_left_head is False
    state = trainer.abstract_state(local=True)
    assert state.replay.finals == {}
    assert not any(k.startswith("moves_left") for k in state.params["params"])
    assert not any(k.startswith("moves_left") for k in trainer.sgd_info_keys)
    on = value_head(preset("chess", value_head="wdl", **ON))
    assert isinstance(on, MovesLeftValue) and isinstance(on.inner, WinDrawLossValue)


def test_the_network_sows_the_head_only_where_asked():
    config = preset("connect_four", num_blocks=1, num_channels=8, **ON)
    game = make_game("connect_four")
    net = make_network(config, game)
    params = init_params(net, game, jax.random.key(0))
    obs = jnp.zeros((3, *game.observation_shape))
    outputs, m = with_moves_left(net.apply)(params, obs)
    plain = net.apply(params, obs)
    np.testing.assert_array_equal(outputs[0], plain[0])
    assert m.shape == (3,) and (m > 0).all()


@pytest.mark.parametrize("changes, field", [
    (dict(moves_left_loss_weight=-0.1), "moves_left_loss_weight"),
    (dict(moves_left_max_effect=1.0), "moves_left_max_effect"),
    (dict(moves_left_slope=-1.0), "moves_left_slope"),
    (dict(moves_left_loss_weight=0.1, game="go_7x7", ownership_loss_weight=1.5), "moves_left_loss_weight"),
    (dict(moves_left_loss_weight=0.1, game="go_7x7", value_head="sai"), "moves_left_loss_weight"),
])
def test_bad_settings_are_refused_in_one_line_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=field) as info:
        Config(**changes)
    assert "\n" not in str(info.value)
