"""A fixed-size, device-resident replay buffer whose value targets arrive when games end.

Self-play writes one position per game in flight per move, always `B` positions at a time into a
ring of `N` slots with `N % B == 0`, so entry `i` always holds a position of game slot `i % B`.
Each entry remembers the id of the game it came from (a per-slot counter). When the game in slot
`b` ends, every entry with slot `b` and that game id receives its outcome z (from the view of the
entry's player to move) and becomes available for sampling. An entry whose game has not ended yet
is never sampled; one overwritten before its game ended is simply lost.

What a position's observation and policy target cost is the game's to say. `obs` holds what
`Game.pack_observation` makes of the observations, a pytree of arrays (Connect Four, Go: the bool planes
themselves; chess: 0/1 planes as bytes and two counts as integers); the loop unpacks a sampled batch. `policy`
holds the search's target dense, [N, A] float32, or, for a game whose legal moves are far fewer than its actions
(`Game.policy_width`; chess: 256 of 4672), as a `SparsePolicy` of W (action, probability) pairs per entry,
expanded to the dense rows a batch trains on when it is sampled (`policy_rows`): the same float32 values at the
same actions, zeros elsewhere. `write` takes either form of target and stores it in the replay's.

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

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct


class SparsePolicy(NamedTuple):
    """A policy target as W (action, probability) pairs per position, [..., W] each.

    actions: int [..., W], distinct action ids; a negative id marks padding (its probability is 0).
    probs: float32 [..., W], the target's probability of each action; every action not listed has 0.
    """

    actions: jax.Array
    probs: jax.Array


PolicyTarget = jax.Array | SparsePolicy  # dense float32 [..., A], or sparse


def sparse_policy(dense: jax.Array, width: int) -> SparsePolicy:
    """The nonzero entries of dense targets [..., A] (every entry but +0.0, subnormal ones too) as `SparsePolicy`
    [..., width], in action order, padded with action -1 (int16 ids where A allows).

    A row with more than `width` nonzeros would lose the last ones. Called with concrete values this raises
    ValueError; traced (in the loop) it cannot happen where `width` is at least the game's most legal moves, the
    search's target being zero off the legal moves."""
    num_actions = dense.shape[-1]
    # Nonzero by its bits, not by `!= 0`: XLA's CPU backend reads subnormal floats as zero in comparisons.
    nonzero = jax.lax.bitcast_convert_type(dense.astype(jnp.float32), jnp.uint32) != 0
    most = jnp.max(jnp.sum(nonzero, axis=-1), initial=0)
    if not isinstance(most, jax.core.Tracer):  # a concrete call (inside jit even a constant target is traced)
        if int(most) > width:
            raise ValueError(f"a policy target has {most} nonzero entries, more than the replay's width {width}")
    flat = dense.reshape(-1, num_actions)
    actions = jax.vmap(lambda row: jnp.nonzero(row, size=width, fill_value=-1)[0])(nonzero.reshape(-1, num_actions))
    probs = jnp.where(actions >= 0, jnp.take_along_axis(flat, jnp.maximum(actions, 0), axis=-1), 0.0)
    lead = dense.shape[:-1]
    return SparsePolicy(actions.astype(_action_dtype(num_actions)).reshape(*lead, width),
                        probs.astype(jnp.float32).reshape(*lead, width))


def dense_policy(policy: SparsePolicy, num_actions: int) -> jax.Array:
    """float32 [..., num_actions]: each listed probability at its action (the stored float32 as is), 0 elsewhere."""
    width = policy.actions.shape[-1]
    lead = policy.actions.shape[:-1]
    actions = policy.actions.reshape(-1, width).astype(jnp.int32)
    actions = jnp.where(actions >= 0, actions, num_actions)  # padding: out of range, dropped by the scatter
    rows = jnp.arange(actions.shape[0])[:, None]
    dense = jnp.zeros((actions.shape[0], num_actions), jnp.float32)
    dense = dense.at[rows, actions].set(policy.probs.reshape(-1, width).astype(jnp.float32), mode="drop")
    return dense.reshape(*lead, num_actions)


def _action_dtype(num_actions: int) -> jnp.dtype:
    return jnp.dtype(jnp.int16) if num_actions <= jnp.iinfo(jnp.int16).max else jnp.dtype(jnp.int32)


def _as_stored(policy: PolicyTarget, stored: PolicyTarget) -> PolicyTarget:
    """`policy` ([B, A] dense or sparse [B, w]) in the layout of the replay's `stored` policy."""
    if not isinstance(stored, SparsePolicy):
        return dense_policy(policy, stored.shape[-1]) if isinstance(policy, SparsePolicy) else policy
    width = stored.actions.shape[-1]
    if not isinstance(policy, SparsePolicy):
        return sparse_policy(policy, width)
    if policy.actions.shape[-1] > width:  # a wider sparse target: keep its nonzero pairs
        kept = sparse_policy(policy.probs, width)
        pick = lambda x: jnp.take_along_axis(x, jnp.maximum(kept.actions, 0).astype(jnp.int32), -1)  # noqa: E731
        policy = SparsePolicy(jnp.where(kept.actions >= 0, pick(policy.actions), -1), kept.probs)
    pad = [(0, 0)] * (policy.actions.ndim - 1) + [(0, width - policy.actions.shape[-1])]
    actions = jnp.where(policy.actions >= 0, policy.actions, -1)  # every padding id as the replay writes it
    return SparsePolicy(jnp.pad(actions, pad, constant_values=-1).astype(stored.actions.dtype),
                        jnp.pad(policy.probs, pad).astype(jnp.float32))


@struct.dataclass
class Replay:
    """Shapes: N entries.

    obs: the stored observations, a pytree of [N, ...] arrays (`Game.pack_observation`; Connect Four, Go: one
    array [N, *obs_shape] of the observation's dtype), policy: the search targets, [N, A] float32 or a
    `SparsePolicy` [N, W] (read them as dense rows with `policy_rows`),
    value [N] float32 (outcome z, valid where has_target), player [N] int32 (player to move),
    game_id [N] int32 (the game's id within its slot; -1 = empty), has_target [N] bool,
    extras: name -> [N] float32, what the loop's methods record per position (see the module docstring).
    finals: name -> [N / B, B, ...], what a finished game gives its positions, once per game (`fill_finals`).
    """

    obs: Any
    policy: PolicyTarget
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
                extras: tuple[str, ...] = (), finals: FinalSpec | None = None, num_slots: int = 1, *,
                obs_layout: Any = None, policy_width: int | None = None) -> Replay:
    """An empty replay of `size` entries keeping the named `extras` (float32 each) too, and per-game `finals`
    for the `num_slots` game slots that write it (B; `size` a multiple of it).

    obs_layout: one position's stored observation, a pytree of `jax.ShapeDtypeStruct` (what
    `Game.pack_observation` makes of one observation); None: one array of `obs_shape` and `obs_dtype`.
    policy_width: keep each policy target as a `SparsePolicy` of this many pairs; None: dense [A] rows.
    """
    rows = size // num_slots
    if obs_layout is None:
        obs_layout = jax.ShapeDtypeStruct(tuple(obs_shape), obs_dtype)
    if policy_width is None:
        policy: PolicyTarget = jnp.zeros((size, num_actions), jnp.float32)
    else:
        policy = SparsePolicy(jnp.full((size, policy_width), -1, _action_dtype(num_actions)),
                              jnp.zeros((size, policy_width), jnp.float32))
    return Replay(
        obs=jax.tree.map(lambda x: jnp.zeros((size, *x.shape), x.dtype), obs_layout),
        policy=policy,
        value=jnp.zeros((size,), jnp.float32),
        player=jnp.zeros((size,), jnp.int32),
        game_id=jnp.full((size,), -1, jnp.int32),
        has_target=jnp.zeros((size,), jnp.bool_),
        extras={name: jnp.zeros((size,), jnp.float32) for name in extras},
        finals={name: jnp.zeros((rows, num_slots, *shape), dtype) for name, (shape, dtype) in (finals or {}).items()},
    )


def write(replay: Replay, ptr: jax.Array, obs: Any, policy: PolicyTarget, player: jax.Array,
          game_id: jax.Array, extras: dict[str, jax.Array] | None = None) -> Replay:
    """Writes one position for each of the B game slots at entries [ptr, ptr + B).

    `ptr` must be a multiple of B (it is `(moves * B) % N` in the loop), so slot b lands on an
    entry with index % B == b. `obs`: the stored form of the observations, leaves [B, ...] in the replay's
    structure (`Game.pack_observation`). `policy`: the search targets, dense [B, A] or a `SparsePolicy` [B, w],
    stored in the replay's layout whichever it is. `extras` (name -> [B]) must name exactly the replay's extras.
    """
    extras = extras or {}
    if set(extras) != set(replay.extras):
        raise ValueError(f"extras {sorted(extras)} given, the replay keeps {sorted(replay.extras)}")

    def put(buf: jax.Array, x: jax.Array) -> jax.Array:
        start = (ptr,) + (0,) * (buf.ndim - 1)
        return jax.lax.dynamic_update_slice(buf, x.astype(buf.dtype), start)

    b = player.shape[0]
    return replay.replace(
        obs=jax.tree.map(put, replay.obs, obs),
        policy=jax.tree.map(put, replay.policy, _as_stored(policy, replay.policy)),
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


def stored_obs(replay: Replay, idx: jax.Array) -> Any:
    """The stored observations of entries `idx` ([batch]), leaves [batch, ...] (`Game.unpack_observation` gives
    the observations)."""
    return jax.tree.map(lambda x: x[idx], replay.obs)


def policy_rows(replay: Replay, idx: jax.Array, num_actions: int) -> jax.Array:
    """float32 [batch, num_actions]: the policy targets of entries `idx` ([batch]) as dense rows, whichever layout
    the replay keeps."""
    if isinstance(replay.policy, SparsePolicy):
        return dense_policy(SparsePolicy(replay.policy.actions[idx], replay.policy.probs[idx]), num_actions)
    return replay.policy[idx]
