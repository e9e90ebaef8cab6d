"""A device-resident queue of start states: positions that new games begin from instead of the game's
initial position.

SAI puts its branch points here (METHODS.md section 2); Go-Exploit's archive (section 3) is the same
store read with `sample` instead of `pop`. Everything is a pure function over one flax struct:

    q = init(template, capacity)          # template: one GameState (unbatched); q holds none yet
    q = push(q, states, mask)             # states [M], mask [M]: store the masked ones (oldest overwritten)
    q, states, got = pop(q, want)         # want [B]: the oldest stored states, one per wanting slot
    states, got = sample(q, key, want)    # uniform draws with replacement, nothing removed

The store is a ring of `C` slots written in order: push number `t` (counting every stored state since
`init`) lands in slot `t % C`, so once it is full the oldest states are overwritten (a circular
archive). `valid` marks the slots that hold a state that was not popped yet.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from azjax.games import GameState


@struct.dataclass
class StartStates:
    """Shapes: C slots.

    states: GameState with leading axis [C] (each state carries its own komi).
    valid: bool [C], the slot holds a state not yet popped.
    pushed: int32 [1], states stored since `init` (the next one goes to slot `pushed % C`); an array of
      one element rather than a scalar so that per-device stores stack along a device axis.
    """

    states: GameState
    valid: jax.Array
    pushed: jax.Array

    @property
    def capacity(self) -> int:
        return self.valid.shape[0]

    @property
    def size(self) -> jax.Array:
        """int32 []: states held."""
        return self.valid.sum(dtype=jnp.int32)


def init(template: GameState, capacity: int) -> StartStates:
    """An empty store of `capacity` slots shaped like `template` (one unbatched state)."""
    if capacity < 1:
        raise ValueError(f"a start-state store needs capacity >= 1, got {capacity}")
    states = jax.tree.map(lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), template)
    return StartStates(states=states, valid=jnp.zeros((capacity,), jnp.bool_), pushed=jnp.zeros((1,), jnp.int32))


def push(q: StartStates, states: GameState, mask: jax.Array) -> StartStates:
    """Stores `states[i]` for every `mask[i]` ([M] each), in index order, overwriting the oldest slots.

    If more than C states are masked at once, only the last C of them are kept.
    """
    c = q.capacity
    mask = mask.astype(jnp.bool_)
    rank = jnp.cumsum(mask, dtype=jnp.int32) - 1  # order among the masked states
    total = mask.sum(dtype=jnp.int32)
    keep = mask & (rank >= total - c)
    slot = jnp.where(keep, (q.pushed[0] + rank) % c, c)  # c = out of bounds: dropped

    def put(buf: jax.Array, x: jax.Array) -> jax.Array:
        return buf.at[slot].set(x.astype(buf.dtype), mode="drop")

    return StartStates(
        states=jax.tree.map(put, q.states, states),
        valid=q.valid.at[slot].set(True, mode="drop"),
        pushed=q.pushed + total,
    )


def _oldest_first(q: StartStates) -> jax.Array:
    """int32 [C]: slot indices, valid slots first, each group from the oldest to the newest."""
    c = q.capacity
    age_rank = (jnp.arange(c, dtype=jnp.int32) - q.pushed[0] % c) % c  # 0 = next slot to be overwritten = oldest
    return jnp.argsort(jnp.where(q.valid, age_rank, c + age_rank)).astype(jnp.int32)


def pop(q: StartStates, want: jax.Array) -> tuple[StartStates, GameState, jax.Array]:
    """Hands the oldest held states, first come first served, to the slots with `want` ([B] bool).

    Returns (store without the handed-out states, states [B], got [B] bool). Where `got` is False the
    returned state is meaningless (the caller keeps its own).
    """
    order = _oldest_first(q)
    rank = jnp.cumsum(want, dtype=jnp.int32) - 1
    got = want & (rank < q.size)
    idx = order[jnp.clip(rank, 0, q.capacity - 1)]
    states = jax.tree.map(lambda x: x[idx], q.states)
    valid = q.valid.at[jnp.where(got, idx, q.capacity)].set(False, mode="drop")
    return q.replace(valid=valid), states, got


def sample(q: StartStates, key: jax.Array, want: jax.Array) -> tuple[GameState, jax.Array]:
    """Independent uniform draws (with replacement) from the held states for the slots with `want`.

    Returns (states [B], got [B] bool: want and the store is not empty). The store is unchanged.
    """
    p = q.valid.astype(jnp.float32)
    idx = jax.random.choice(key, q.capacity, want.shape, p=p / jnp.maximum(p.sum(), 1.0))
    return jax.tree.map(lambda x: x[idx], q.states), want & (q.size > 0)
