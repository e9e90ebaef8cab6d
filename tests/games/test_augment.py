"""Board symmetries move the observation and the policy target together."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import make_game
from azjax.games.augment import augment


def _marked(n_rows: int, n_cols: int, planes: int, num_actions: int, points: list[int],
            column_actions: bool = False) -> tuple:
    """Observations with one marked point each and policies one-hot on the same point (or column)."""
    obs = np.zeros((len(points), n_rows, n_cols, planes), np.float32)
    pol = np.zeros((len(points), num_actions), np.float32)
    for i, p in enumerate(points):
        obs[i, p // n_cols, p % n_cols, 0] = 1
        pol[i, p % n_cols if column_actions else p] = 1
    return jnp.asarray(obs), jnp.asarray(pol)


def test_go_symmetries_keep_policy_on_the_marked_point():
    game = make_game("go_7x7")
    points = list(range(49)) * 4
    obs, pol = _marked(7, 7, 17, 50, points)
    o, p = augment(game, jax.random.key(0), obs, pol)
    o, p = np.asarray(o), np.asarray(p)
    moved = 0
    for i in range(len(points)):
        where = np.flatnonzero(o[i, :, :, 0].reshape(-1))
        assert len(where) == 1 and p[i, where[0]] == 1 and p[i].sum() == 1
        moved += where[0] != points[i]
    assert moved > len(points) // 2  # the symmetries are not all the identity


def test_go_pass_is_unchanged_and_all_eight_symmetries_occur():
    game = make_game("go_7x7")
    obs, pol = _marked(7, 7, 17, 50, [9] * 400)  # point (1, 2): its orbit has 8 points
    pol = pol.at[:, 49].set(0.5).at[:, 9].set(0.5)
    o, p = augment(game, jax.random.key(1), obs, pol)
    np.testing.assert_allclose(np.asarray(p)[:, 49], 0.5)
    images = {int(np.flatnonzero(np.asarray(x)[:, :, 0].reshape(-1))[0]) for x in o}
    assert len(images) == 8


def test_connect_four_mirror():
    game = make_game("connect_four")
    obs, pol = _marked(6, 7, 2, 7, [35 + c for c in range(7)] * 20, column_actions=True)
    o, p = augment(game, jax.random.key(2), obs, pol)
    o, p = np.asarray(o), np.asarray(p)
    flipped = 0
    for i in range(o.shape[0]):
        col = int(np.flatnonzero(o[i, 5, :, 0])[0])
        assert p[i, col] == 1
        flipped += col != i % 7
    assert flipped > 0


def test_chess_is_untouched():
    game = make_game("chess")
    obs = jnp.ones((2, 8, 8, 119))
    pol = jnp.eye(2, game.num_actions)
    o, p = augment(game, jax.random.key(0), obs, pol)
    assert o is obs and p is pol
