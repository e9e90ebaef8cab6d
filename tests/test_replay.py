"""The replay's layouts: policy targets kept sparse and expanded to the dense rows bit for bit, observations kept
packed and sampled as the game's float32, and Connect Four's and Go's layout as it always was."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import replay as rb
from azjax.config import preset
from azjax.games.chess import PackedObservation
from azjax.train.loop import Trainer

CHESS_ACTIONS = 4672


def _random_targets(rng: np.random.Generator, rows: int, num_actions: int, most: int,
                    legal: np.ndarray | None = None) -> np.ndarray:
    """float32 [rows, num_actions]: distributions over a random number (0 to `most`) of random actions (of the
    `legal` ones where given), with values of every size float32 has (subnormal ones too)."""
    out = np.zeros((rows, num_actions), np.float32)
    for r in range(rows):
        allowed = np.flatnonzero(legal[r]) if legal is not None else np.arange(num_actions)
        k = int(rng.integers(0, min(most, len(allowed)) + 1))
        support = rng.choice(allowed, k, replace=False)
        values = rng.dirichlet(np.full(k, 0.3)).astype(np.float32) if k else np.zeros(0, np.float32)
        if k > 2:
            values[0], values[1] = np.float32(1e-45), np.float32(3e-39)  # subnormal probabilities survive
        out[r, support] = values
    return out


def _bytes(x: Any) -> bytes:
    return np.asarray(x).tobytes()


def test_a_sparse_policy_expands_to_the_dense_row_bit_for_bit() -> None:
    dense = _random_targets(np.random.default_rng(0), 32, CHESS_ACTIONS, 256)
    dense[3] = 0.0  # a row with no nonzero at all
    dense[4] = 0.0
    dense[4, :256] = np.float32(1 / 256)  # a row exactly as wide as the width
    sparse = rb.sparse_policy(jnp.asarray(dense), 256)
    assert sparse.actions.dtype == jnp.int16 and sparse.actions.shape == (32, 256)
    assert sparse.probs.dtype == jnp.float32 and (np.asarray(sparse.actions) < 0).any()  # padded rows
    assert _bytes(rb.dense_policy(sparse, CHESS_ACTIONS)) == _bytes(dense)
    assert _bytes(jax.jit(rb.dense_policy, static_argnums=1)(sparse, CHESS_ACTIONS)) == _bytes(dense)
    jitted = jax.jit(rb.sparse_policy, static_argnums=1)(jnp.asarray(dense), 256)
    assert _bytes(jitted.actions) == _bytes(sparse.actions) and _bytes(jitted.probs) == _bytes(sparse.probs)


def test_a_target_with_more_nonzeros_than_the_width_is_refused() -> None:
    """Called with concrete values the compaction checks the width; in the jitted loop it cannot be exceeded, the
    search's target being zero off the legal moves (tests/games/test_chess.py)."""
    dense = np.zeros((2, 40), np.float32)
    dense[1, :9] = 1 / 9
    with pytest.raises(ValueError, match="9 nonzero entries, more than the replay's width 8"):
        rb.sparse_policy(jnp.asarray(dense), 8)
    replay = rb.init_replay(4, (1,), jnp.float32, 40, num_slots=2, policy_width=8)
    with pytest.raises(ValueError, match="more than the replay's width"):
        rb.write(replay, jnp.int32(0), jnp.zeros((2, 1)), jnp.asarray(dense), jnp.zeros(2, jnp.int32),
                 jnp.zeros(2, jnp.int32))
    rb.sparse_policy(jnp.asarray(dense), 9)  # as wide as its widest row: kept


def test_a_jitted_write_compiles_with_a_constant_target_and_keeps_it() -> None:
    """Inside jit even a target closed over as a constant is traced: the width is checked on concrete calls only
    (`azjax bench --breakdown` writes the same search output at every move)."""
    dense = _random_targets(np.random.default_rng(3), 2, 40, 8)
    replay = rb.init_replay(4, (1,), jnp.float32, 40, num_slots=2, policy_width=8)
    target = jnp.asarray(dense)

    def writes(r: rb.Replay) -> rb.Replay:  # a scan over moves, each writing the same constant target
        return jax.lax.scan(lambda r, _: (_write2(r, target), None), r, jnp.arange(2))[0]

    written = jax.jit(writes)(replay)
    assert _bytes(rb.policy_rows(written, jnp.arange(2), 40)) == _bytes(dense)


def _write2(replay: rb.Replay, policy: rb.PolicyTarget) -> rb.Replay:
    return rb.write(replay, jnp.int32(0), jnp.zeros((2, 1)), policy, jnp.zeros(2, jnp.int32), jnp.zeros(2, jnp.int32))


def _write(replay: rb.Replay, policy: rb.PolicyTarget) -> rb.Replay:
    b = 3
    return rb.write(replay, jnp.int32(0), jnp.zeros((b, 1)), policy, jnp.zeros(b, jnp.int32), jnp.zeros(b, jnp.int32))


def test_the_replay_stores_a_dense_or_a_sparse_target_alike() -> None:
    """`write` takes the search's dense target or an already sparse one (narrower or wider than the replay's,
    padded anywhere) and stores it in the replay's layout: every way reads back the same dense rows."""
    num_actions, width = 20, 8
    dense = _random_targets(np.random.default_rng(1), 3, num_actions, 6)
    narrow = rb.sparse_policy(jnp.asarray(dense), 6)
    # Wider, with padding between the pairs (id -5: any negative id is padding) and in reverse action order.
    actions = np.full((3, 12), -5, np.int32)
    probs = np.zeros((3, 12), np.float32)
    for r in range(3):
        support = np.flatnonzero(dense[r])[::-1]
        actions[r, 1:2 * len(support):2], probs[r, 1:2 * len(support):2] = support, dense[r, support]
    wide = rb.SparsePolicy(jnp.asarray(actions), jnp.asarray(probs))
    idx = jnp.arange(3)
    sparse_replay = rb.init_replay(6, (1,), jnp.float32, num_actions, num_slots=3, policy_width=width)
    dense_replay = rb.init_replay(6, (1,), jnp.float32, num_actions, num_slots=3)
    for policy in (jnp.asarray(dense), narrow, wide):
        stored = _write(sparse_replay, policy)
        assert stored.policy.actions.shape == (6, width) and stored.policy.actions.dtype == jnp.int16
        assert _bytes(rb.policy_rows(stored, idx, num_actions)) == _bytes(dense)
        assert _bytes(rb.policy_rows(_write(dense_replay, policy), idx, num_actions)) == _bytes(dense)
    # Pairs are stored in the replay's padding (-1), whatever marked them in the target written.
    assert set(np.unique(np.asarray(_write(sparse_replay, wide).policy.actions))) <= set(range(-1, num_actions))


def _chess_positions(trainer: Trainer, plies: int) -> list[Any]:
    """The game states [B] of the trainer's games in flight along `plies` random legal moves."""
    games = trainer.init(0).actors.state
    step = jax.jit(jax.vmap(trainer.game.step))
    out = [games]
    for k in jax.random.split(jax.random.key(5), plies):
        games = step(games, jax.random.categorical(k, jnp.where(games.legal_action_mask, 0.0, -jnp.inf)))
        out.append(games)
    return out


def test_a_chess_replay_samples_the_batches_a_dense_float32_replay_gives_byte_for_byte(
        chess_tiny_overrides: dict) -> None:
    """What SGD trains on (`Trainer.sampled`: observations float32, dense policy rows) from the compact replay is
    what a replay of float32 observations and dense rows, written with the same positions and read as the loop
    read it before, gives."""
    trainer = Trainer(preset("chess", **{**chess_tiny_overrides, "replay_size": 16}))
    rng = np.random.default_rng(2)
    b, n = trainer.sizes.num_envs, trainer.sizes.replay_size
    compact = trainer.init(0).replay
    assert isinstance(compact.obs, PackedObservation) and isinstance(compact.policy, rb.SparsePolicy)
    dense = rb.init_replay(n, trainer.game.observation_shape, jnp.float32, trainer.game.num_actions, num_slots=b)
    for move, games in enumerate(_chess_positions(trainer, 6)):  # 7 writes into 4 rows of 4: the ring wraps
        ptr = jnp.int32((move * b) % n)
        policy = jnp.asarray(_random_targets(rng, b, trainer.game.num_actions, 218,
                                             np.asarray(games.legal_action_mask)))
        game_id = jnp.full((b,), move, jnp.int32)
        compact = trainer.write_positions(compact, ptr, games, policy, game_id, {})
        dense = rb.write(dense, ptr, games.observation, policy, games.current_player, game_id)
    idx = jax.random.randint(jax.random.key(6), (64,), 0, n)
    obs, policy = jax.jit(trainer.sampled)(compact, idx)
    assert obs.dtype == jnp.float32 and policy.shape == (64, trainer.game.num_actions)
    assert _bytes(obs) == _bytes(dense.obs[idx]) and _bytes(policy) == _bytes(dense.policy[idx])
    assert np.asarray(policy).any(axis=1).mean() > 0.9  # the rows hold targets (not two empty replays alike)


def test_a_chess_replay_is_a_fifth_of_the_dense_one_and_other_games_keep_their_layout(
        chess_tiny_overrides: dict, tiny_overrides: dict) -> None:
    chess = Trainer(preset("chess", **chess_tiny_overrides))
    replay = chess.abstract_state(local=True).replay
    n = chess.sizes.replay_size
    assert (replay.policy.actions.shape, replay.policy.actions.dtype) == ((n, 256), jnp.int16)
    assert (replay.policy.probs.shape, replay.policy.probs.dtype) == ((n, 256), jnp.float32)
    per_position = sum(x.dtype.itemsize * int(np.prod(x.shape)) for x in jax.tree.leaves((replay.obs, replay.policy)))
    assert per_position / n <= (8 * 8 * 119 * 4 + CHESS_ACTIONS * 4) / 5
    for game, overrides in (("connect_four", tiny_overrides), ("go_7x7", tiny_overrides)):
        trainer = Trainer(preset(game, **overrides))
        replay = trainer.abstract_state(local=True).replay
        n, a = trainer.sizes.replay_size, trainer.game.num_actions
        assert isinstance(replay.obs, jax.ShapeDtypeStruct), game  # one array, not a packed pytree
        assert (replay.obs.shape, replay.obs.dtype) == ((n, *trainer.game.observation_shape), jnp.bool_), game
        assert (replay.policy.shape, replay.policy.dtype) == ((n, a), jnp.float32), game
