"""TDLeaf(lambda) value targets (docs/methods.md section 4; KnightCap, Baxter, Tridgell & Weaver 1998).

Each position t of a trajectory records the network value v_t of the leaf of its search's principal
variation (from the root, follow the most visited child to the first unexpanded or terminal node), from
the view of the player to move at t (`principal_variation`). When the game ends, with the outcome z in
place of v_N, the temporal differences d_j = v_{j+1} - v_j (each in the view of the target's player) give
the value target

    G_t = v_t + sum_{j >= t} lambda^(j - t) d_j,

equivalently G_t = (1 - lambda) v'_{t+1} + lambda G'_{t+1}, G_{N-1} = z (' = seen by the player at t:
negated when the player to move changes). lambda = 1 telescopes to z: AlphaZero's target, bit for bit
here (`lambda_returns` forms G_t as z_t plus a correction that is exactly zero at lambda = 1).

Option (the paper's): a positive d_j caused by an opponent move that the principal variation did not
predict is set to 0, so a player does not learn to expect its opponent's blunders. Per ply, for the target
of position t (player p), the moves j >= t by the other player are opponent moves; d_j > 0 for p means the
mover's own TD e_j = v'_{j+1} - v_j (mover's view) is negative. The move at j was *predicted* when the
search at j - 1 (p to move) played the first move of its principal variation and the opponent answered
with its second (`move_predicted`). This is KnightCap's rule at ply granularity (KnightCap's positions were
its own, two plies apart).

The target takes z's place in the z/q mix: (1 - w) G_t + w q_t (`mix_with_q`).

mctx conventions (checked in the tests on hand-built trees): `tree.raw_values[n]` is the evaluator's value
of node n for the player to move at n (azjax's recurrent function; 0 at terminals); an edge carries the
mover's reward and a discount (-1 between two-player plies, 0 into a terminal), and the value of a path
for the player at its first node is r_1 + g_1 (r_2 + g_2 (... + g_k v_leaf)), which is how mctx backs up.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx

from azjax import replay as rb
from azjax.games import Game, GameState
from azjax.methods.alphazero import QKind, Records, Searched, mix_with_q, search_q
from azjax.search.layout import node_moves, slot_action

__all__ = ["PrincipalVariation", "TDLeafTargets", "lambda_returns", "mix_with_q", "move_predicted",
           "principal_variation", "ring_lambda_returns"]


class PrincipalVariation(NamedTuple):
    """The principal variation of each of B searches.

    value: float [B], the PV leaf's value for the player to move at the root: the network value of the leaf
      carried up the path by mctx's rewards and discounts (a terminal leaf: the terminal reward).
    leaf: int32 [B], the leaf's node index (0 when the root itself is the leaf).
    length: int32 [B], moves on the path from the root to the leaf.
    actions: int32 [B, L], the path's moves, -1 past `length`.
    terminal: bool [B], the leaf is terminal (the edge into it has discount 0).
    """

    value: jax.Array
    leaf: jax.Array
    length: jax.Array
    actions: jax.Array
    terminal: jax.Array


def principal_variation(tree: mctx.Tree, max_length: int | None = None) -> PrincipalVariation:
    """Follows the most visited child (first on ties) from each root of `tree` ([B, N] nodes) to the first
    node with no visited child or a terminal node; `max_length` (static; default N - 1, the deepest a tree of
    N nodes goes) bounds the path and the `actions` width."""
    n = tree.node_visits.shape[-1]
    width = n - 1 if max_length is None else max_length
    width = max(width, 1)

    def one(t: mctx.Tree) -> PrincipalVariation:
        def cond(c):
            node, length, _, _, _, terminal = c
            return (length < width) & ~terminal & (t.children_visits[node].max() > 0)

        def body(c):
            node, length, actions, value, discount, _ = c
            a = jnp.argmax(t.children_visits[node]).astype(jnp.int32)
            value = value + discount * t.children_rewards[node, a]
            g = t.children_discounts[node, a]
            return (t.children_index[node, a], length + 1, actions.at[length].set(a), value, discount * g, g == 0)

        init = (jnp.int32(0), jnp.int32(0), jnp.full((width,), -1, jnp.int32), jnp.zeros((), t.raw_values.dtype),
                jnp.ones((), t.raw_values.dtype), jnp.bool_(False))
        node, length, actions, value, discount, terminal = jax.lax.while_loop(cond, body, init)
        return PrincipalVariation(value + discount * t.raw_values[node], node, length, actions, terminal)

    return jax.vmap(one)(tree)


def move_predicted(prev_pv: jax.Array, prev_action: jax.Array, action: jax.Array) -> jax.Array:
    """bool [...]: the move `action` was the reply predicted by the previous position's search: that search
    (its principal variation's first two moves `prev_pv` [..., 2], -1 = none) played `prev_action` =
    prev_pv[0] and `action` = prev_pv[1]. The caller ands it with "the previous position is of the same game"."""
    return (prev_pv[..., 0] == prev_action) & (prev_pv[..., 1] == action) & (prev_pv[..., 1] >= 0)


def lambda_returns(leaf_value: jax.Array, player: jax.Array, outcome: jax.Array, continues: jax.Array,
                   lam: float | jax.Array, predicted: jax.Array | None = None) -> jax.Array:
    """TDLeaf(lambda) value targets G_t over time-major trajectories. float32 [T, ...].

    Args (time first, any batch axes after it, e.g. [T, B] for a replay ring seen one game slot per column):
      leaf_value: float [T, ...], v_t, the PV leaf value of position t for its player to move.
      player: int [T, ...], the player id to move at t (the sign between t and t+1 flips when it changes).
      outcome: float [T, ...], z_t, the game outcome for the player to move at t (consistent along a game).
      continues: bool [T, ...], position t+1 is the next position of t's game (False at a game's last
        recorded position, whose target is its outcome, and at the last row).
      lam: lambda in [0, 1]. 1 returns `outcome` bit for bit (without `predicted`).
      predicted: bool [T, ...] or None. Given, positive TDs caused by opponent moves not predicted are set to
        0; `predicted[j]` says the move played at j (from j to j+1) was predicted (`move_predicted`).
    Positions of unfinished games get meaningless targets (their outcome is unknown); mask them as the
    replay does.
    """
    lam = jnp.asarray(lam, jnp.float32)
    v = leaf_value.astype(jnp.float32)
    z = outcome.astype(jnp.float32)
    cont = continues.astype(jnp.bool_).at[-1].set(False)
    nxt = lambda x: jnp.concatenate([x[1:], x[-1:]], axis=0)  # noqa: E731  x_{t+1} (last row unused)
    sign = jnp.where(nxt(player) == player, 1.0, -1.0)  # turns t+1's view into t's
    v_next = jnp.where(cont, sign * nxt(v), z)  # v'_{t+1}, with z in place of v_N

    # E_t = G_t - z_t = (1 - lambda)(v'_{t+1} - z_t) + lambda E'_{t+1}; E = 0 at a game's last position.
    def error_step(e_next, x):
        vn, zt, s, c = x
        e = jnp.where(c, (1.0 - lam) * (vn - zt) + lam * s * e_next, 0.0)
        return e, e

    zero = jnp.zeros(v.shape[1:], jnp.float32)
    _, err = jax.lax.scan(error_step, zero, (v_next, z, sign, cont), reverse=True)
    correction = err
    if predicted is not None:
        # The mover's own TD at j: e_j = v'_{j+1} - v_j. Zeroing the positive d_j (= -e_j) an unpredicted
        # opponent move gave the target's player p adds e_j to p's target, for every earlier position of p.
        # Two sums, one per player frame: C_q(t) over the moves j >= t of the player other than q.
        e_own = v_next - v
        zeroed = jnp.where(predicted.astype(jnp.bool_) | (e_own >= 0), 0.0, e_own)
        players = jnp.stack([player == player[:1], player != player[:1]])  # frame 0: t=0's player; frame 1: other

        def zero_step(c_next, x):
            zj, same_as_frame, c = x  # same_as_frame [2, ...]: the mover at j is the frame's player
            c_here = jnp.where(same_as_frame, 0.0, zj) + lam * jnp.where(c, c_next, 0.0)
            return c_here, c_here

        _, c_all = jax.lax.scan(zero_step, jnp.zeros((2, *v.shape[1:]), jnp.float32),
                                (zeroed, jnp.moveaxis(players, 0, 1), cont), reverse=True)
        correction = err + jnp.where(players[0], c_all[:, 0], c_all[:, 1])
    # z + 0 is z except for z = -0.0; `where` keeps z itself wherever the correction vanishes.
    return jnp.where(correction == 0, z, z + correction)


def ring_lambda_returns(replay: rb.Replay, ptr: jax.Array, num_slots: int, lam: float,
                        zero_unpredicted: bool) -> jax.Array:
    """float32 [N]: the lambda-returns of every replay entry, the replay's ring read as trajectories.

    The loop writes B = `num_slots` positions per move, so row r of the [N / B, B] view holds one move of
    every game slot and column b one slot's positions in time order, starting after the newest row
    (`ptr // B`). Consecutive rows of a column are one trajectory while their game id is the same. Outcomes
    are `replay.value` (meaningful where `has_target`); records `pv_value` (and, with `zero_unpredicted`,
    `pv_first`, `pv_second`, `action`) are the loop's (`TDLeafTargets.record`).
    """
    rows = replay.value.shape[0] // num_slots
    order = (ptr // num_slots + 1 + jnp.arange(rows)) % rows  # oldest row first
    view = lambda x: x.reshape(rows, num_slots)[order]  # noqa: E731
    game = view(replay.game_id)
    same_next = jnp.concatenate([game[1:] == game[:-1], jnp.zeros((1, num_slots), jnp.bool_)]) & (game >= 0)
    predicted = None
    if zero_unpredicted:
        pv = jnp.stack([view(replay.extras["pv_first"]), view(replay.extras["pv_second"])], axis=-1).astype(jnp.int32)
        action = view(replay.extras["action"]).astype(jnp.int32)
        # The move at j (from j to j + 1) was predicted by the search at j - 1 of the same game.
        by_prev = move_predicted(pv[:-1], action[:-1], action[1:]) & same_next[:-1]
        predicted = jnp.concatenate([jnp.zeros((1, num_slots), jnp.bool_), by_prev])
    g = lambda_returns(view(replay.extras["pv_value"]), view(replay.player), view(replay.value), same_next, lam,
                       predicted)
    # Back from time order to the ring's entries.
    return jnp.zeros((rows, num_slots), jnp.float32).at[order].set(g).reshape(-1)


@dataclasses.dataclass(frozen=True)
class TDLeafTargets:
    """The targets seam with TDLeaf(lambda) value targets: each position records its principal variation's
    leaf value; when a game ends its positions get the lambda-returns in place of z (perspective-correct for
    two players, z in place of the last leaf value), mixed with q as z is (`mix_with_q`).

    lam = 1 gives AlphaZero's `OutcomeTargets` bit for bit. `zero_unpredicted`: a positive TD caused by an
    opponent move the principal variation did not predict is set to 0 (KnightCap).
    """

    lam: float
    zero_unpredicted: bool = False
    q_weight: float = 0.0
    mixes_q: bool | None = None  # as `OutcomeTargets.mixes_q`
    q: QKind = "policy"  # as `OutcomeTargets.q`
    game: Game | None = None  # the game, where it is searched over slots: the PV's moves as its actions

    def __post_init__(self) -> None:
        if self.mixes_q is None:
            object.__setattr__(self, "mixes_q", bool(self.q_weight > 0))

    @property
    def records(self) -> tuple[str, ...]:
        names = ("pv_value",) + (("pv_first", "pv_second", "action") if self.zero_unpredicted else ())
        return names + (("q",) if self.mixes_q else ())

    def record(self, searched: Searched, states: GameState, action: jax.Array) -> Records:
        del states
        tree = searched.out.search_tree
        pv = principal_variation(tree)
        records = {"pv_value": pv.value}
        if self.zero_unpredicted:
            first = pv.actions[:, 0]
            second = pv.actions[:, 1] if pv.actions.shape[1] > 1 else jnp.full_like(action, -1)
            if self.game is not None:  # a tree over slots: the slots as the game's actions (else as they are)
                root = jnp.zeros_like(first)
                child = tree.children_index[jnp.arange(first.shape[0]), 0, jnp.maximum(first, 0)]
                first, second = slot_action(node_moves(self.game, tree, root), first), slot_action(
                    node_moves(self.game, tree, child), second)
            records.update(pv_first=first.astype(jnp.float32), pv_second=second.astype(jnp.float32),
                           action=action.astype(jnp.float32))
        if self.mixes_q:
            records["q"] = search_q(searched, self.q)
        return records

    def game_ended(self, replay: rb.Replay, ptr: jax.Array, ended: jax.Array, game_id: jax.Array,
                   rewards: jax.Array) -> rb.Replay:
        filled = rb.fill_outcomes(replay, ended, game_id, rewards)
        new = filled.has_target & ~replay.has_target
        # Only a move on which a game ended changes targets; most moves skip the pass over the ring.
        value = jax.lax.cond(
            new.any(),
            lambda: jnp.where(new, ring_lambda_returns(filled, ptr, ended.shape[0], self.lam, self.zero_unpredicted),
                              filled.value),
            lambda: filled.value)
        return filled.replace(value=value)

    def trainable(self, replay: rb.Replay) -> jax.Array:
        return replay.has_target

    def value_target(self, z: jax.Array, recorded: Records) -> jax.Array:
        if "q" not in recorded:
            return z
        return mix_with_q(z, recorded["q"], self.q_weight)
