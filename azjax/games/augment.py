"""Board symmetries for training batches: each sampled position gets a random symmetry of its game.

Connect Four: left-right mirror (2). Go: the dihedral group of the square (8), pass unchanged.
Chess: none (castling and pawn direction break the symmetry).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from azjax.games.base import Game
from azjax.games.connect_four import ConnectFour
from azjax.games.go import Go


def _dihedral(x: jax.Array, k: jax.Array) -> jax.Array:
    """The k-th (0..7) symmetry of the square acting on the first two axes of x."""
    branches = [
        (lambda y, r=r, f=f: jnp.rot90(jnp.flip(y, 1) if f else y, r, axes=(0, 1)))
        for f in (False, True)
        for r in range(4)
    ]
    return jax.lax.switch(k, branches, x)


def augment(game: Game, key: jax.Array, obs: jax.Array, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A random symmetry per position. obs [B, H, W, C], policy [B, A] -> same shapes."""
    batch = obs.shape[0]
    if isinstance(game, ConnectFour):
        flip = jax.random.bernoulli(key, 0.5, (batch,))
        obs = jnp.where(flip[:, None, None, None], obs[:, :, ::-1], obs)
        policy = jnp.where(flip[:, None], policy[:, ::-1], policy)
        return obs, policy
    if isinstance(game, Go):
        n = game.size
        k = jax.random.randint(key, (batch,), 0, 8)

        def one(o: jax.Array, p: jax.Array, k: jax.Array) -> tuple[jax.Array, jax.Array]:
            board = _dihedral(p[: n * n].reshape(n, n), k).reshape(-1)
            return _dihedral(o, k), jnp.concatenate([board, p[n * n :]])

        return jax.vmap(one)(obs, policy, k)
    return obs, policy
