"""A fixed-size, device-resident replay buffer whose value targets arrive when games end.

Self-play writes one position per game in flight per move, always `B` positions at a time into a
ring of `N` slots with `N % B == 0`, so entry `i` always holds a position of game slot `i % B`.
Each entry remembers the id of the game it came from (a per-slot counter). When the game in slot
`b` ends, every entry with slot `b` and that game id receives its outcome z (from the view of the
entry's player to move) and becomes available for sampling. An entry whose game has not ended yet
is never sampled; one overwritten before its game ended is simply lost.

Methods keep more per position in `extras` (name -> [N] array), for example SAI's signed komi `kbar`
(the loss forms rho(0) with it) or the search's value `q` of q-mixed value targets
(`azjax.methods.alphazero.OutcomeTargets`); a plain AlphaZero replay has none.

What a finished game gives all its positions alike (KataGo's final ownership and score) is kept once per game,
in `finals` (name -> [N / B, B, ...]): game g of slot b at row g % (N / B) of column b (`fill_finals`), read
for sampled entries through their slot and game id (`sampled_finals`). Every game writes at least one entry,
so the N / B entries a slot keeps hold positions of at most N / B consecutive games, and a row is rewritten
only once no entry of its previous game is left. Filling a game costs [B, ...] per move, not [N, ...].
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
    extras: name -> [N] float32, what the loop's methods record per position (see the module docstring).
    finals: name -> [N / B, B, ...], what a finished game gives its positions, once per game (`fill_finals`).
    """

    obs: jax.Array
    policy: jax.Array
    value: jax.Array
    player: jax.Array
    game_id: jax.Array
    has_target: jax.Array
    # A dict: its leaves flatten in key order (`kbar` before `q`), as the two optional fields that held them
    # before (`q` was `root_value`), so loop checkpoints written then still restore.
    extras: dict[str, jax.Array] = struct.field(default_factory=dict)
    # Empty unless a method keeps per-game records: no leaves, so checkpoints written before it still restore.
    finals: dict[str, jax.Array] = struct.field(default_factory=dict)


FinalSpec = dict[str, tuple[tuple[int, ...], jnp.dtype]]  # name -> (shape per game, dtype)


def init_replay(size: int, obs_shape: tuple[int, ...], obs_dtype: jnp.dtype, num_actions: int,
                extras: tuple[str, ...] = (), finals: FinalSpec | None = None, num_slots: int = 1) -> Replay:
    """An empty replay of `size` entries keeping the named `extras` (float32 each) too, and per-game `finals`
    for the `num_slots` game slots that write it (B; `size` a multiple of it)."""
    rows = size // num_slots
    return Replay(
        obs=jnp.zeros((size, *obs_shape), obs_dtype),
        policy=jnp.zeros((size, num_actions), jnp.float32),
        value=jnp.zeros((size,), jnp.float32),
        player=jnp.zeros((size,), jnp.int32),
        game_id=jnp.full((size,), -1, jnp.int32),
        has_target=jnp.zeros((size,), jnp.bool_),
        extras={name: jnp.zeros((size,), jnp.float32) for name in extras},
        finals={name: jnp.zeros((rows, num_slots, *shape), dtype) for name, (shape, dtype) in (finals or {}).items()},
    )


def write(replay: Replay, ptr: jax.Array, obs: jax.Array, policy: jax.Array, player: jax.Array,
          game_id: jax.Array, extras: dict[str, jax.Array] | None = None) -> Replay:
    """Writes one position for each of the B game slots at entries [ptr, ptr + B).

    `ptr` must be a multiple of B (it is `(moves * B) % N` in the loop), so slot b lands on an
    entry with index % B == b. `extras` (name -> [B]) must name exactly the replay's extras.
    """
    extras = extras or {}
    if set(extras) != set(replay.extras):
        raise ValueError(f"extras {sorted(extras)} given, the replay keeps {sorted(replay.extras)}")

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
        extras={name: put(replay.extras[name], x) for name, x in extras.items()},
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


def fill_finals(replay: Replay, ended: jax.Array, game_id: jax.Array, values: dict[str, jax.Array]) -> Replay:
    """Keeps what each game that just ended gives its positions: `values` name -> [B, ...], row b for the game
    `game_id[b]` of slot b, kept where `ended[b]` (bool [B]); the other slots' rows stay as they are."""
    finals = {}
    for name, table in replay.finals.items():
        rows, slots = game_id % table.shape[0], jnp.arange(table.shape[1])
        new = values[name].astype(table.dtype)
        keep = ended.reshape(-1, *([1] * (new.ndim - 1)))
        finals[name] = table.at[rows, slots].set(jnp.where(keep, new, table[rows, slots]))
    return replay.replace(finals=finals)


def sampled_finals(replay: Replay, idx: jax.Array) -> dict[str, jax.Array]:
    """What the games of entries `idx` ([batch]) gave them when they ended (`fill_finals`): name -> [batch, ...].
    Valid for entries whose game has ended (e.g. those with a target)."""
    out = {}
    for name, table in replay.finals.items():
        out[name] = table[replay.game_id[idx] % table.shape[0], idx % table.shape[1]]
    return out


def sample_indices(trainable: jax.Array, key: jax.Array, batch_size: int) -> jax.Array:
    """int32 [batch]: a uniform sample, with replacement, of the `trainable` entries (bool [N]: e.g. those whose
    outcome is known). With no such entry yet it samples uniformly from everything (the caller discards that
    batch)."""
    p = trainable.astype(jnp.float32)
    p = jnp.where(p.sum() > 0, p, 1.0)
    return jax.random.choice(key, p.shape[0], (batch_size,), p=p / p.sum())


def recorded(replay: Replay, idx: jax.Array) -> dict[str, jax.Array]:
    """The extras of entries `idx` ([batch]): name -> [batch]."""
    return {name: x[idx] for name, x in replay.extras.items()}
