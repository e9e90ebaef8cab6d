"""azjax's Go rules (`azjax.games.go_rules`) against pgx's own: the same games, bit for bit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pgx.go
import pytest
from pgx._src.games import go as pgx_go

from azjax.games.go_rules import chain_liberties, go_env, neighbour_sum


def _random_games(env, key, num_games: int, plies: int):  # noqa: ANN001, ANN202
    """Every state of `num_games` random games (passes made likely, so games also end by two passes)."""
    def body(states, k):  # noqa: ANN001, ANN202
        k_move, k_pass = jax.random.split(k)
        legal = states.legal_action_mask
        logits = jnp.where(legal, 0.0, -jnp.inf).at[:, -1].add(jnp.log(8.0))  # pass ~8x as likely as a point
        actions = jax.random.categorical(k_move, logits)
        states = jax.vmap(env.step)(states, actions)
        return states, states

    states = jax.vmap(env.init)(jax.random.split(key, num_games))
    return jax.lax.scan(body, states, jax.random.split(key, plies))[1]


@pytest.mark.slow
@pytest.mark.parametrize("size", [7, 9])
def test_random_games_give_pgx_s_states_masks_observations_and_rewards(size):
    ours, theirs = go_env(size), pgx.go.Go(size=size, komi=0.0)
    key = jax.random.key(size)
    a = jax.jit(lambda k: _random_games(ours, k, 64, 2 * size * size))(key)
    b = jax.jit(lambda k: _random_games(theirs, k, 64, 2 * size * size))(key)
    jax.tree.map(np.testing.assert_array_equal, a, b)
    assert np.asarray(b.terminated).any() and (np.asarray(b.rewards) != 0).any()  # games ended and were scored
    assert np.asarray(b._x.num_captured).sum() > 0  # and stones were captured


def test_chain_liberties_count_what_touches_each_chain():
    # 3x3: a black chain of two stones at the top left, one white stone in the centre.
    #   B B .
    #   . W .
    #   . . .
    board = jnp.array([1, 1, 0, 0, -5, 0, 0, 0, 0], jnp.int32)
    count, index_sum, index_squares = chain_liberties(board, 3)
    # The black chain (id 1) touches points 3 (once) and 2 (once); white (id 5) touches 3, 5, 7 (0-based;
    # its fourth neighbour is black).
    assert int(count[0]) == 2 and int(index_sum[0]) == (3 + 1) + (2 + 1)
    assert int(count[4]) == 3 and int(index_squares[4]) == sum((p + 1) ** 2 for p in (3, 5, 7))
    expected = pgx_go._count(pgx_go.GameState(board=board), 3)
    for ours, theirs in zip((count, index_sum, index_squares), expected, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_neighbour_sum_counts_the_on_board_neighbours_of_each_point():
    counts = np.asarray(neighbour_sum(jnp.ones(25, jnp.int32), 5)).reshape(5, 5)
    assert counts[0, 0] == counts[4, 4] == 2 and counts[0, 2] == counts[2, 4] == 3 and counts[2, 2] == 4
    marked = np.asarray(neighbour_sum(jnp.zeros(25, jnp.int32).at[7].set(1), 5))  # row 1, column 2
    assert sorted(np.flatnonzero(marked)) == [2, 6, 8, 12]
