"""Chess observations as the replay stores them: packed to bytes and two counts, unpacked to pgx's float32 bit for
bit; and the policy width the replay keeps, which every chess policy target fits."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pgx._src.games import chess as pgx_chess_rules

from azjax.config import preset
from azjax.games import make_game
from azjax.games.chess import HALFMOVE_PLANE, PLY_PLANE, chess_state_from_fen
from azjax.train.loop import Trainer


def _bits(x: Any) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def _random_play(game: Any, states: Any, plies: int, seed: int) -> list[Any]:
    """The observations [B, 8, 8, 119] of `states` and of the positions after each of `plies` random legal moves."""
    step = jax.jit(jax.vmap(game.step))
    out = [states.observation]
    for k in jax.random.split(jax.random.key(seed), plies):
        action = jax.random.categorical(k, jnp.where(states.legal_action_mask, 0.0, -jnp.inf))
        states = step(states, action)
        out.append(states.observation)
    return out


def test_packed_chess_observations_unpack_to_the_same_float32_bits_along_random_games() -> None:
    game = make_game("chess")
    starts = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 4))
    # A FEN with castling rights half gone, en passant and a fifty-move count far along.
    fen = jax.tree.map(lambda x: jnp.stack([x] * 4), chess_state_from_fen("r3k2r/8/8/3pP3/8/8/8/R3K2R w Kq d6 87 60"))
    observations = _random_play(game, starts, 40, seed=1) + _random_play(game, starts.replace(env=fen), 20, seed=2)
    obs = jnp.concatenate(observations)
    packed = jax.jit(game.pack_observation)(obs)
    assert packed.planes.dtype == jnp.uint8 and packed.planes.shape == (*obs.shape[:-1], 117)
    assert set(np.unique(np.asarray(packed.halfmove))) > {87, 88}  # the FEN's counts are in the test
    np.testing.assert_array_equal(_bits(jax.jit(game.unpack_observation)(packed)), _bits(obs))
    np.testing.assert_array_equal(_bits(game.unpack_observation(game.pack_observation(obs))), _bits(obs))  # eager


def test_every_ply_count_to_4096_and_fifty_move_count_to_200_unpacks_to_pgxs_float32() -> None:
    """pgx divides step_count by 512 and halfmove_count by 100 in float32; unpacking the stored integers must give
    the same bits for every count a game can reach, and well past (games may run longer than 512 plies later)."""
    game = make_game("chess")
    pgx_chess = pgx_chess_rules.Game()  # pgx's own observation, the reference for every plane
    x = pgx_chess.init()
    counts = jnp.arange(4097, dtype=jnp.int32)

    def observe(ply: jax.Array, halfmove: jax.Array) -> jax.Array:
        return pgx_chess.observe(x._replace(step_count=ply, halfmove_count=halfmove))

    obs = jax.jit(jax.vmap(observe))(counts, counts % 201)  # every halfmove count 0..200, twenty times over
    packed = jax.jit(game.pack_observation)(obs)
    np.testing.assert_array_equal(np.asarray(packed.ply), np.arange(4097))
    np.testing.assert_array_equal(np.asarray(packed.halfmove), np.arange(4097) % 201)
    unpacked = jax.jit(game.unpack_observation)(packed)
    for plane in (PLY_PLANE, HALFMOVE_PLANE):
        np.testing.assert_array_equal(_bits(unpacked[..., plane]), _bits(obs[..., plane]), err_msg=f"plane {plane}")
    np.testing.assert_array_equal(_bits(unpacked), _bits(obs))


def test_the_packed_observation_holds_a_quarter_of_the_bytes() -> None:
    game = make_game("chess")
    obs = game.init(jax.random.key(0)).observation
    packed = jax.eval_shape(game.pack_observation, obs)
    stored = sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(packed))
    assert stored == 8 * 8 * 117 + 2 + 2 <= obs.nbytes / 4


def test_other_games_store_their_observations_as_they_are() -> None:
    for name in ("connect_four", "go_7x7"):
        game = make_game(name)
        obs = game.init(jax.random.key(0)).observation
        assert game.pack_observation(obs) is obs and game.unpack_observation(obs) is obs and game.policy_width is None


def test_the_policy_width_holds_the_most_legal_moves_a_chess_position_has() -> None:
    import chess as pychess

    game = make_game("chess")
    fen = "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1"  # the most legal moves known of any position
    assert pychess.Board(fen).legal_moves.count() == 218
    # pgx finds 200 of them (it misses the moves of the queen on h4 and the rook on h8): never more than chess has.
    assert int(np.asarray(chess_state_from_fen(fen).legal_action_mask).sum()) <= 218
    assert game.policy_width is not None and 218 <= game.policy_width < game.num_actions


def test_a_chess_search_target_is_zero_off_the_legal_moves(chess_tiny_overrides: dict) -> None:
    """What lets the replay keep W pairs: every nonzero of the search's target is a legal move, so none is lost."""
    trainer = Trainer(preset("chess", **chess_tiny_overrides))
    state = trainer.init(0)
    games = state.actors.state
    step = jax.jit(jax.vmap(trainer.game.step))
    for k in jax.random.split(jax.random.key(3), 6):  # a few plies in, where the legal moves differ per game
        games = step(games, jax.random.categorical(k, jnp.where(games.legal_action_mask, 0.0, -jnp.inf)))
    search = jax.jit(lambda p, k, g: trainer.search.search(p, k, g)[0].policy_target)
    target = np.asarray(search(state.params, jax.random.key(4), games))
    legal = np.asarray(games.legal_action_mask)
    assert (target[~legal] == 0).all() and (target[legal] > 0).any()
    assert (target != 0).sum(-1).max() <= trainer.game.policy_width
