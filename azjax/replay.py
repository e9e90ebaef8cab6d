"""A fixed-size, device-resident replay buffer whose value targets arrive when games end.

Self-play writes one position per game in flight per move, always `B` positions at a time into a
ring of `N` slots with `N % B == 0`, so entry `i` always holds a position of game slot `i % B`.
Each entry remembers the id of the game it came from (a per-slot counter). When the game in slot
`b` ends, every entry with slot `b` and that game id receives its outcome z (from the view of the
entry's player to move) and becomes available for sampling. An entry whose game has not ended yet
is never sampled; one overwritten before its game ended is simply lost.

With SAI values (METHODS.md section 2) each entry also keeps its signed komi kbar (the komi as points
for the player to move), which the loss needs to form rho(0); a plain replay has no such field.
Likewise, with a value target that mixes z with the search's root value q
(`Config.value_target_q_weight` > 0), each entry keeps q.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class Replay:
    """Shapes: N entries.

    obs [N, *obs_shape] (the game's observation dtype), policy [N, A] float32 (search target),
    value [N] float32 (outcome z, valid where has_target), player [N] int32 (player to move),
    game_id [N] int32 (the game's id within its slot; -1 = empty), has_target [N] bool,
    kbar [N] float32 (SAI only, else None: the signed komi of the entry's player to move),
    root_value [N] float32 (q-mixed value targets only, else None: the root search value q for the
    entry's player to move).
    """

    obs: jax.Array
    policy: jax.Array
    value: jax.Array
    player: jax.Array
    game_id: jax.Array
    has_target: jax.Array
    kbar: jax.Array | None = None
    root_value: jax.Array | None = None


def init_replay(size: int, obs_shape: tuple[int, ...], obs_dtype: jnp.dtype, num_actions: int,
                with_kbar: bool = False, with_root_value: bool = False) -> Replay:
    return Replay(
        obs=jnp.zeros((size, *obs_shape), obs_dtype),
        policy=jnp.zeros((size, num_actions), jnp.float32),
        value=jnp.zeros((size,), jnp.float32),
        player=jnp.zeros((size,), jnp.int32),
        game_id=jnp.full((size,), -1, jnp.int32),
        has_target=jnp.zeros((size,), jnp.bool_),
        kbar=jnp.zeros((size,), jnp.float32) if with_kbar else None,
        root_value=jnp.zeros((size,), jnp.float32) if with_root_value else None,
    )


def write(replay: Replay, ptr: jax.Array, obs: jax.Array, policy: jax.Array, player: jax.Array,
          game_id: jax.Array, kbar: jax.Array | None = None, root_value: jax.Array | None = None) -> Replay:
    """Writes one position for each of the B game slots at entries [ptr, ptr + B).

    `ptr` must be a multiple of B (it is `(moves * B) % N` in the loop), so slot b lands on an
    entry with index % B == b. `kbar` [B] and `root_value` [B] are required exactly when the replay
    keeps them.
    """
    if (kbar is None) != (replay.kbar is None):
        raise ValueError("kbar must be given exactly when the replay stores it (SAI values)")
    if (root_value is None) != (replay.root_value is None):
        raise ValueError("root_value must be given exactly when the replay stores it (q-mixed value targets)")
    def put(buf: jax.Array, x: jax.Array) -> jax.Array:
        start = (ptr,) + (0,) * (buf.ndim - 1)
        return jax.lax.dynamic_update_slice(buf, x.astype(buf.dtype), start)

    b = player.shape[0]
    return replay.replace(
        obs=put(replay.obs, obs),
        policy=put(replay.policy, policy),
        value=put(replay.value, jnp.zeros((b,), jnp.float32)),
        player=put(replay.player, player),
        game_id=put(replay.game_id, game_id),
        has_target=put(replay.has_target, jnp.zeros((b,), jnp.bool_)),
        kbar=None if kbar is None else put(replay.kbar, kbar),
        root_value=None if root_value is None else put(replay.root_value, root_value),
    )


def fill_outcomes(replay: Replay, ended: jax.Array, game_id: jax.Array, rewards: jax.Array) -> Replay:
    """Gives every stored position of the games that just ended its outcome.

    Args:
      ended: bool [B], the game in slot b ended on this move.
      game_id: int32 [B], the id of the game that was in slot b.
      rewards: float32 [B, 2], the final move's rewards per player id (the outcome).
    """
    num_slots = ended.shape[0]
    slot = jnp.arange(replay.value.shape[0]) % num_slots
    match = ended[slot] & (replay.game_id == game_id[slot]) & ~replay.has_target
    z = rewards[slot, replay.player]
    return replay.replace(
        value=jnp.where(match, z, replay.value),
        has_target=replay.has_target | match,
    )


def sample_indices(replay: Replay, key: jax.Array, batch_size: int) -> jax.Array:
    """int32 [batch]: a uniform sample, with replacement, of entries whose outcome is known. With no
    such entry yet it samples uniformly from everything (the caller discards that batch)."""
    p = replay.has_target.astype(jnp.float32)
    p = jnp.where(p.sum() > 0, p, 1.0)
    return jax.random.choice(key, p.shape[0], (batch_size,), p=p / p.sum())


def value_targets(replay: Replay, idx: jax.Array, q_weight: float = 0.0) -> jax.Array:
    """float32 [batch]: the value targets of entries `idx`: (1 - w) z + w q where the replay keeps the
    root values q (w = `q_weight`), else the outcomes z."""
    z = replay.value[idx]
    if replay.root_value is None:
        return z
    return (1.0 - q_weight) * z + q_weight * replay.root_value[idx]


def sample(replay: Replay, key: jax.Array, batch_size: int,
           q_weight: float = 0.0) -> tuple[jax.Array, jax.Array, jax.Array]:
    """obs [batch, *obs_shape], policy [batch, A], value target [batch] of `sample_indices`' entries."""
    idx = sample_indices(replay, key, batch_size)
    return replay.obs[idx], replay.policy[idx], value_targets(replay, idx, q_weight)
