"""A device-resident queue of start states: positions that new games begin from instead of the game's
initial position.

SAI puts its branch points here (docs/methods.md section 2); Go-Exploit's archive (section 3) is the same
store read with `sample` instead of `pop`. Everything is a pure function over one flax struct:

    q = init(template, capacity)          # template: one GameState (unbatched); q holds none yet
    q = push(q, states, mask)             # states [M], mask [M]: store the masked ones (oldest overwritten)
    q, states, got = pop(q, want)         # want [B]: the oldest stored states, one per wanting slot
    states, got = sample(q, key, want)    # uniform draws with replacement, nothing removed

The store is a ring of `C` slots written in order: push number `t` (counting every stored state since
`init`) lands in slot `t % C`, so once it is full the oldest states are overwritten (a circular
archive). `valid` marks the slots that hold a state that was not popped yet.

Go-Exploit's other two archive kinds fill the same store by other rules (they are never popped):

    q = push_reservoir(q, key, states, mask)   # classic reservoir sampling; `pushed` counts states offered
    q, dropped = push_expanding(q, states, mask)  # never evicts; what does not fit is dropped and counted
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


def push_reservoir(q: StartStates, key: jax.Array, states: GameState, mask: jax.Array) -> StartStates:
    """Reservoir sampling (Vitter's algorithm R) of `states[i]` for every `mask[i]` ([M] each), in index order.

    Here `pushed` counts every state *offered* since `init` (stored or not). The offered state with 0-based
    number n goes to slot n while n < C; afterwards it replaces slot j, j uniform in {0, ..., n}, when j < C,
    so after n offers every offered state is held with probability C / n. Within one call a later state wins
    a slot that an earlier one took, as in the sequential algorithm. Never pop a reservoir (it relies on
    slots 0..min(n, C)-1 being the held ones).
    """
    c = q.capacity
    mask = mask.astype(jnp.bool_)
    rank = jnp.cumsum(mask, dtype=jnp.int32) - 1
    # int32 counters: saturate rather than wrap (past 2^31 offers the odds C/n stay at C/2^31).
    n = jnp.minimum(q.pushed[0], jnp.iinfo(jnp.int32).max - mask.shape[0]) + rank
    draw = jax.random.randint(key, mask.shape, 0, jnp.maximum(n, 0) + 1)
    slot = jnp.where(n < c, n, draw)
    slot = jnp.where(mask & (slot < c), slot, c).astype(jnp.int32)  # c = out of bounds: not stored
    # The last writer of each slot wins (XLA's scatter leaves the order of duplicate writes unspecified).
    index = jnp.arange(mask.shape[0], dtype=jnp.int32)
    last = jnp.full((c,), -1, jnp.int32).at[slot].max(index, mode="drop")
    slot = jnp.where((slot < c) & (last[jnp.minimum(slot, c - 1)] == index), slot, c)

    def put(buf: jax.Array, x: jax.Array) -> jax.Array:
        return buf.at[slot].set(x.astype(buf.dtype), mode="drop")

    total = mask.sum(dtype=jnp.int32)
    return StartStates(
        states=jax.tree.map(put, q.states, states),
        valid=q.valid.at[slot].set(True, mode="drop"),
        pushed=jnp.minimum(q.pushed, jnp.iinfo(jnp.int32).max - total) + total,
    )


def push_expanding(q: StartStates, states: GameState, mask: jax.Array) -> tuple[StartStates, jax.Array]:
    """Stores `states[i]` for every `mask[i]` ([M] each) in the next free slots, evicting nothing.

    An expanding archive (Go-Exploit) on a device: a large fixed capacity that reports when it is full.
    Returns (store, dropped: int32 [], the masked states that found no free slot). Never pop an expanding
    archive (slots 0..pushed-1 are the held ones).
    """
    c = q.capacity
    mask = mask.astype(jnp.bool_)
    rank = jnp.cumsum(mask, dtype=jnp.int32) - 1
    fits = mask & (q.pushed[0] + rank < c)
    slot = jnp.where(fits, q.pushed[0] + rank, c)

    def put(buf: jax.Array, x: jax.Array) -> jax.Array:
        return buf.at[slot].set(x.astype(buf.dtype), mode="drop")

    stored = fits.sum(dtype=jnp.int32)
    q = StartStates(states=jax.tree.map(put, q.states, states), valid=q.valid.at[slot].set(True, mode="drop"),
                    pushed=q.pushed + stored)
    return q, mask.sum(dtype=jnp.int32) - stored
