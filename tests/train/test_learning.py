"""The loop's SGD learns: on a fixed batch of positions with known targets, the loop's own SGD step (sampling,
board symmetries, the loss, gradient clipping, AdamW, warm-up and cosine schedule) lowers the loss, per value
head, below what any network with a constant head could reach; with the gradient's sign flipped the same steps
raise it (the negative control: a test that cannot tell the two apart checks nothing)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from azjax import replay as rb
from azjax.build import init_params
from azjax.config import preset
from azjax.games import where_games
from azjax.train.loop import Trainer, loss_fn, with_head_health

STEPS = 120  # SGD steps (the config's num_steps); the schedule (warm-up then cosine) spans them
POSITIONS = 16
LEARNING = dict(num_steps=STEPS, sgd_steps_per_step=1, lr_warmup_steps=5, learning_rate=2e-2, batch_size=32,
                replay_size=64)


def _random_positions(trainer: Trainer, n: int, seed: int) -> Any:
    """`n` positions of random games, each 2 to 9 plies in (none finished), as a batched game state."""
    game = trainer.game
    rng = np.random.default_rng(seed)
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(seed), n))
    plies = rng.integers(2, 10, n)
    step = jax.jit(jax.vmap(game.step))
    for ply in range(int(plies.max())):
        legal = np.asarray(states.legal_action_mask)
        moves = np.array([rng.choice(np.flatnonzero(m)) for m in legal], np.int32)
        after = step(states, jnp.asarray(moves))
        keep = (ply < plies) & ~np.asarray(after.terminated)  # a game that would end stays where it was
        states = where_games(jnp.asarray(keep), after, states)
    return states


def _replay(trainer: Trainer, obs: jax.Array, policy: jax.Array, z: jax.Array,
            extras: dict[str, jax.Array] | None = None) -> rb.Replay:
    """A replay that holds exactly the batch, every entry with its target, as the loop's SGD step reads it."""
    n = obs.shape[0]
    return rb.Replay(obs=trainer.game.pack_observation(obs), policy=policy, value=z, player=jnp.zeros((n,), jnp.int32),
                     game_id=jnp.zeros((n,), jnp.int32), has_target=jnp.ones((n,), jnp.bool_),
                     extras=extras or {})


def _one_hot_legal(states: Any, rng: np.random.Generator) -> jax.Array:
    """A policy target per position: one legal move, picked at random (a position-dependent target)."""
    legal = np.asarray(states.legal_action_mask)
    picks = [rng.choice(np.flatnonzero(m)) for m in legal]
    return jnp.asarray(np.eye(legal.shape[1], dtype=np.float32)[picks])


def _losses(trainer: Trainer, params: Any, replay: rb.Replay) -> dict[str, float]:
    """The loss on the whole batch, as the loop's loss function computes it (no symmetries)."""
    obs, policy = trainer.sampled(replay, jnp.arange(replay.value.shape[0]))
    _, info = loss_fn(with_head_health(trainer.net.apply), trainer.value, params, obs, policy,
                      replay.value, 1.0, dict(replay.extras))
    return {k: float(info[k]) for k in ("loss", "policy_loss", "value_loss")}


def _train(trainer: Trainer, replay: rb.Replay, seed: int = 0) -> tuple[Any, Any]:
    """(initial params, params after the config's num_steps of the loop's own SGD step on `replay`), run as the
    loop runs it: inside `shard_map` over the trainer's mesh, with the trainer's optimizer. One jitted step called
    num_steps times: on XLA's CPU backend convolution gradients inside a scan run several times slower."""
    params = init_params(trainer.net, trainer.game, jax.random.key(seed))

    def one(params: Any, opt_state: Any, replay: rb.Replay, key_data: jax.Array) -> tuple[Any, Any]:
        (params, opt_state), _ = trainer.sgd_step((params, opt_state), jax.random.wrap_key_data(key_data), replay)
        return params, opt_state

    sgd = jax.jit(jax.shard_map(one, mesh=trainer.mesh, in_specs=(P(), P(), P(), P()), out_specs=(P(), P()),
                                check_vma=False))
    trained, opt_state = params, trainer.optimizer.init(params)
    for key in jax.random.split(jax.random.key(seed), trainer.config.num_steps):
        trained, opt_state = sgd(trained, opt_state, replay, jax.random.key_data(key))
    return params, trained


def _losses_before_and_after(trainer: Trainer, replay: rb.Replay) -> tuple[dict[str, float], dict[str, float]]:
    """The batch's losses at the initial parameters and after the config's num_steps of the loop's SGD on it."""
    before, after = _train(trainer, replay)
    return _losses(trainer, before, replay), _losses(trainer, after, replay)


def _flip_the_gradients_sign(trainer: Trainer) -> Trainer:
    """The trainer with every gradient negated before its optimizer sees it: gradient ascent."""
    trainer.optimizer = optax.chain(optax.scale(-1.0), trainer.optimizer)
    return trainer


def _c4_trainer(tiny_overrides: dict) -> Trainer:
    return Trainer(preset("connect_four", **{**tiny_overrides, **LEARNING}), devices=jax.devices()[:1])


def _random_targets_batch(trainer: Trainer, seed: int) -> tuple[rb.Replay, float, float]:
    """A random result and a random legal move for each of POSITIONS random positions: (the batch, the best loss a
    constant value head can reach (z's variance), and a constant policy's (the entropy of the mean policy target))."""
    states = _random_positions(trainer, POSITIONS, seed=seed)
    rng = np.random.default_rng(seed + 1)
    policy = _one_hot_legal(states, rng)
    z = jnp.asarray(rng.permutation(np.repeat([-1.0, 1.0], POSITIONS // 2)).astype(np.float32))
    mean_policy = np.asarray(policy).mean(0)
    constant_policy_loss = float(-(mean_policy * np.log(np.where(mean_policy > 0, mean_policy, 1))).sum())
    return _replay(trainer, states.observation, policy, z), float(np.var(np.asarray(z))), constant_policy_loss


def _c4_batch(trainer: Trainer) -> tuple[rb.Replay, float, float]:
    return _random_targets_batch(trainer, seed=0)


@pytest.mark.slow
def test_sgd_lowers_the_tanh_value_and_policy_losses_below_what_constant_heads_can_reach(tiny_overrides):
    trainer = _c4_trainer(tiny_overrides)
    replay, constant_value_loss, constant_policy_loss = _c4_batch(trainer)
    before, after = _losses_before_and_after(trainer, replay)
    # A constant value head's best mean squared error is z's variance, a constant policy's best cross-entropy
    # the mean target's entropy: the network must fit the positions, by a stated margin, to pass.
    assert after["value_loss"] < 0.5 * constant_value_loss, (before, after)
    assert after["policy_loss"] < constant_policy_loss - 0.3, (before, after, constant_policy_loss)
    assert after["loss"] < 0.6 * before["loss"], (before, after)


# ---------------------------------------------------------------- KataGo's global pooling (Go)


def _pooled_go_trainer(tiny_overrides: dict) -> Trainer:
    # Twice the steps: memorising random results through pooled means and maxima alone is slower; at STEPS the value
    # loss ended just under half the constant head's with one XLA flag set and at 0.52 of it with another.
    config = preset("go_7x7", **{**tiny_overrides, **LEARNING, "num_blocks": 2, "num_steps": 2 * STEPS},
                    global_pooling=True)
    return Trainer(config, devices=jax.devices()[:1])


def _pooled_go_batch(trainer: Trainer) -> tuple[rb.Replay, float, float]:
    return _random_targets_batch(trainer, seed=4)


@pytest.mark.slow
def test_sgd_teaches_the_pooled_heads_of_a_global_pooling_network_below_what_constant_heads_can_reach(
        tiny_overrides):
    trainer = _pooled_go_trainer(tiny_overrides)
    replay, constant_value_loss, constant_policy_loss = _pooled_go_batch(trainer)
    before, after = _losses_before_and_after(trainer, replay)
    # The value reads the board only through its pooled means and maxima, the policy one logit per point: both
    # must still tell the positions apart.
    assert after["value_loss"] < 0.5 * constant_value_loss, (before, after)
    assert after["policy_loss"] < constant_policy_loss - 0.3, (before, after, constant_policy_loss)


# ---------------------------------------------------------------- SAI's sigmoid-komi value head

KBARS = np.array([-3.0, -1.0, 1.0, 3.0], np.float32)  # signed komi, from the view of the player to move


def _sai_trainer(sai_tiny_overrides: dict) -> Trainer:
    config = preset("go_7x7", **{**sai_tiny_overrides, **LEARNING, "replay_size": 4 * POSITIONS})
    return Trainer(config, devices=jax.devices()[:1])


def _sai_batch(trainer: Trainer) -> tuple[rb.Replay, float]:
    """Each position at four komis, its result z = sign(t + kbar) for a position's own lead t = +-2 (the
    lead the head's alpha must learn). Returns the batch and the best value loss of any value that depends on
    the komi alone (a constant network: alpha and beta the same for every position): the variance of z
    within each komi."""
    states = _random_positions(trainer, POSITIONS, seed=2)
    rng = np.random.default_rng(3)
    lead = rng.permutation(np.repeat([-2.0, 2.0], POSITIONS // 2)).astype(np.float32)
    kbar = np.tile(KBARS, POSITIONS)
    z = np.sign(np.repeat(lead, len(KBARS)) + kbar).astype(np.float32)
    komi_only_loss = float(np.mean([np.var(z[kbar == k]) for k in KBARS]))
    obs = jnp.repeat(states.observation, len(KBARS), axis=0)
    policy = jnp.repeat(_one_hot_legal(states, rng), len(KBARS), axis=0)
    return _replay(trainer, obs, policy, jnp.asarray(z), {"kbar": jnp.asarray(kbar)}), komi_only_loss


@pytest.mark.slow
def test_sgd_teaches_the_sai_head_each_positions_lead_below_what_the_komi_alone_explains(sai_tiny_overrides):
    trainer = _sai_trainer(sai_tiny_overrides)
    replay, komi_only_loss = _sai_batch(trainer)
    assert komi_only_loss == pytest.approx(0.5)  # half the komis decide the result, half need the position
    before, after = _losses_before_and_after(trainer, replay)
    assert after["value_loss"] < 0.5 * komi_only_loss, (before, after)
    assert after["loss"] < 0.6 * before["loss"], (before, after)


# ---------------------------------------------------------------- Leela Chess Zero's win/draw/loss head


def _wdl_trainer(tiny_overrides: dict) -> Trainer:
    return Trainer(preset("connect_four", **{**tiny_overrides, **LEARNING}, value_head="wdl"),
                   devices=jax.devices()[:1])


def _wdl_batch(trainer: Trainer) -> tuple[rb.Replay, float]:
    """Random positions with a random result each, a third each won, drawn and lost; returns the batch and the
    best value loss of a constant head (the entropy of the results' frequencies)."""
    states = _random_positions(trainer, 3 * 6, seed=6)
    rng = np.random.default_rng(7)
    z = rng.permutation(np.repeat([-1.0, 0.0, 1.0], 6)).astype(np.float32)
    replay = _replay(trainer, states.observation, _one_hot_legal(states, rng), jnp.asarray(z))
    return replay, float(np.log(3.0))


@pytest.mark.slow
def test_sgd_teaches_the_win_draw_loss_head_each_positions_result_below_what_a_constant_head_can_reach(
        tiny_overrides):
    trainer = _wdl_trainer(tiny_overrides)
    replay, constant_value_loss = _wdl_batch(trainer)
    before, after = _losses_before_and_after(trainer, replay)
    assert after["value_loss"] < 0.5 * constant_value_loss, (before, after)
    assert after["loss"] < 0.6 * before["loss"], (before, after)


# ---------------------------------------------------------------- AlphaZero's convolutional chess policy head


def _conv_chess_trainer(tiny_overrides: dict) -> Trainer:
    config = preset("chess", **{**tiny_overrides, **LEARNING}, policy_head="conv")
    return Trainer(config, devices=jax.devices()[:1])


def _conv_chess_batch(trainer: Trainer) -> tuple[rb.Replay, float, float]:
    return _random_targets_batch(trainer, seed=8)


@pytest.mark.slow
def test_sgd_teaches_the_convolutional_chess_policy_each_positions_move_below_what_a_constant_policy_can_reach(
        tiny_overrides):
    trainer = _conv_chess_trainer(tiny_overrides)
    assert trainer.net.policy_planes == 73  # the conv head, not the dense one
    replay, constant_value_loss, constant_policy_loss = _conv_chess_batch(trainer)
    before, after = _losses_before_and_after(trainer, replay)
    # Each position's target is one of its own legal moves, read at that move's from-square and plane.
    assert after["policy_loss"] < constant_policy_loss - 0.3, (before, after, constant_policy_loss)
    assert after["value_loss"] < 0.5 * constant_value_loss, (before, after)


# ---------------------------------------------------------------- the negative control, per head

_HEADS = {  # head: (its trainer, its batch, the fixture of its tiny overrides)
    "tanh": (_c4_trainer, _c4_batch, "tiny_overrides"),
    "pooled": (_pooled_go_trainer, _pooled_go_batch, "tiny_overrides"),
    "sai": (_sai_trainer, _sai_batch, "sai_tiny_overrides"),
    "wdl": (_wdl_trainer, _wdl_batch, "tiny_overrides"),
}


@pytest.mark.slow
@pytest.mark.parametrize("head", list(_HEADS))
def test_with_the_gradients_sign_flipped_the_same_sgd_steps_raise_the_loss(head: str,
                                                                          request: pytest.FixtureRequest) -> None:
    make_trainer, make_batch, overrides = _HEADS[head]
    trainer = _flip_the_gradients_sign(make_trainer(request.getfixturevalue(overrides)))
    replay = make_batch(trainer)[0]
    before, after = _losses_before_and_after(trainer, replay)
    assert after["value_loss"] > before["value_loss"] and after["loss"] > before["loss"], (before, after)
