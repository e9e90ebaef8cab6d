"""Certainty propagation (Lc0; the MCTS-Solver of Winands, Bjornsson and Saito): proven results backed up the tree
(docs/methods.md section 14).

Every node keeps bounds lower <= v <= upper on its value v for the player to move there (the search's sign
convention, docs/methods.md section 0), [-1, 1] while nothing is known. A child seen from its parent is worth
r + d v_child (reward r of the move, discount d: -1, or 0 where the move ended the game), so its bounds there are
r + d [lower, upper], sorted. A node's bounds are the largest of its legal children's: the mover picks the best
child. A child not expanded yet counts as [-1, 1], unless the node was *scanned* when it was expanded: then every
move that ends the game at once is known by its reward. A node is proven where lower == upper: a proven win
(1), loss (-1) or draw (0).

After each simulation the path from the new node to the root is bounded again, and every proven node on it gets
its exact value, as its own value and as its parent's child value, so that PUCT's and the Gumbel root's Q-values
see it. The root's move (`certain_output`) is a proven win where there is one (a move that ends the game first),
and never a proven loss while a move that is not one remains; the policy target follows.

`Certainty` plugs this into AlphaZero's policies as a `SearchExtension` (`azjax.search.policies`): the tree's extra
data is a `CertaintyData`, the loop runs the bookkeeping after each simulation, the selection rule is the
policy's own. Off, the policies never enter this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx

__all__ = ["Certainty", "CertaintyData", "ChildBounds", "certain_output", "child_bounds", "propagate"]

# (embeddings of a batch of nodes [B]) -> float32 [B, A]: the reward to the node's mover of each child whose move
# ends the game at once, NaN for the others (not legal, or the game goes on).
EndedFn = Callable[[Any], jax.Array]


@chex.dataclass(frozen=True)
class CertaintyData:
    """Per-node certainty state, carried in `mctx.Tree.extra_data` (all leaves lead with B).

    Attributes:
      lower, upper: float32 [B, N]: bounds on each node's value for the player to move there.
      ended: float32 [B, N, A]: each child's reward to the node's mover where its move ends the game, NaN elsewhere,
        as scanned when the node was expanded; None without the scan.
      root_gumbel: float [B, A]: Gumbel noise read by mctx's Gumbel root selection, or None (PUCT).
    """

    lower: jax.Array
    upper: jax.Array
    ended: jax.Array | None = None
    root_gumbel: jax.Array | None = None


class ChildBounds(NamedTuple):
    """What a node knows of its children [B, A], from its mover's view."""

    lower: jax.Array  # float32: bounds on the child's worth r + d v_child
    upper: jax.Array
    legal: jax.Array  # bool: the child is a legal move
    ends_game: jax.Array  # bool: its move ends the game (known where expanded or scanned)


def init_certainty_data(batch_size: int, num_simulations: int, num_actions: int, scan: bool,
                        root_gumbel: jax.Array | None = None) -> CertaintyData:
    """Nothing known yet: every node of a tree of `num_simulations + 1` nodes bounded by [-1, 1]."""
    shape = (batch_size, num_simulations + 1)
    return CertaintyData(lower=jnp.full(shape, -1.0, jnp.float32), upper=jnp.full(shape, 1.0, jnp.float32),
                         ended=jnp.full((*shape, num_actions), jnp.nan, jnp.float32) if scan else None,
                         root_gumbel=root_gumbel)


def child_bounds(tree: mctx.Tree, node: jax.Array, lower: jax.Array | None = None,
                 upper: jax.Array | None = None) -> ChildBounds:
    """The children of node `node` [B] of each tree, with the bounds the tree's `CertaintyData` gives them (or the
    nodes' `lower` and `upper` [B, N], where given)."""
    data: CertaintyData = tree.extra_data
    lower = data.lower if lower is None else lower
    upper = data.upper if upper is None else upper
    batch = jnp.arange(node.shape[0])
    index = tree.children_index[batch, node]  # [B, A]
    expanded = index != mctx.Tree.UNVISITED
    child = jnp.maximum(index, 0)
    reward, discount = tree.children_rewards[batch, node], tree.children_discounts[batch, node]
    a = reward + discount * lower[batch[:, None], child]
    b = reward + discount * upper[batch[:, None], child]
    if data.ended is None:
        known = jnp.zeros_like(expanded)
        lower_unexpanded, upper_unexpanded = -1.0, 1.0
    else:
        ended = data.ended[batch, node]
        known = ~jnp.isnan(ended)
        lower_unexpanded, upper_unexpanded = jnp.where(known, ended, -1.0), jnp.where(known, ended, 1.0)
    # Priors are masked to the lowest finite logit at illegal moves (the root's by mctx's policies, the others by
    # the recurrent function); a finished game's node has uniform ones and takes its bounds from its parent's edge.
    legal = tree.children_prior_logits[batch, node] > jnp.finfo(jnp.float32).min / 2
    return ChildBounds(lower=jnp.where(expanded, jnp.minimum(a, b), lower_unexpanded),
                       upper=jnp.where(expanded, jnp.maximum(a, b), upper_unexpanded),
                       legal=legal, ends_game=jnp.where(expanded, discount == 0, known))


def propagate(tree: mctx.Tree, leaf: jax.Array) -> mctx.Tree:
    """Bounds every node on the path from `leaf` [B] to the root again, then writes each proven node's exact value
    (its `node_values` entry and its parent's `children_values` entry). A node whose own move ended the game is
    worth 0 to its mover (the edge's reward carries the result), as mctx values it."""
    batch = jnp.arange(leaf.shape[0])
    num_nodes = tree.node_values.shape[1]
    data: CertaintyData = tree.extra_data

    # The walk carries only the bounds and the path; the tree it reads stays outside the loop.
    def cond(state: tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
        return jnp.any(state[2] != mctx.Tree.NO_PARENT)

    def body(state: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
        lower_all, upper_all, index = state
        active = index != mctx.Tree.NO_PARENT
        node = jnp.maximum(index, 0)
        children = child_bounds(tree, node, lower_all, upper_all)
        has_child = children.legal.any(axis=-1)
        lower = jnp.where(has_child, jnp.max(jnp.where(children.legal, children.lower, -1.0), axis=-1), -1.0)
        upper = jnp.where(has_child, jnp.max(jnp.where(children.legal, children.upper, -1.0), axis=-1), 1.0)
        parent, action = tree.parents[batch, node], jnp.maximum(tree.action_from_parent[batch, node], 0)
        ended = (parent != mctx.Tree.NO_PARENT) & (tree.children_discounts[batch, jnp.maximum(parent, 0), action] == 0)
        lower, upper = jnp.where(ended, 0.0, lower), jnp.where(ended, 0.0, upper)
        at = jnp.where(active, node, num_nodes)  # out of range: dropped
        return (lower_all.at[batch, at].set(lower, mode="drop"), upper_all.at[batch, at].set(upper, mode="drop"),
                jnp.where(active, parent, mctx.Tree.NO_PARENT))

    lower, upper, _ = jax.lax.while_loop(cond, body, (data.lower, data.upper, leaf.astype(jnp.int32)))
    # Every proven node's exact value, [B, N] at once: its own, and its parent's child value.
    proven = lower == upper
    parent_at = jnp.where(proven & (tree.parents != mctx.Tree.NO_PARENT), tree.parents, num_nodes)
    action = jnp.maximum(tree.action_from_parent, 0)
    return tree.replace(
        extra_data=data.replace(lower=lower, upper=upper),
        node_values=jnp.where(proven, lower, tree.node_values),
        children_values=tree.children_values.at[batch[:, None], parent_at, action].set(lower, mode="drop"),
    )


def _scan(tree: mctx.Tree, node: jax.Array, ended_fn: EndedFn) -> mctx.Tree:
    """Records which moves of node `node` [B] end the game, and with what reward."""
    batch = jnp.arange(node.shape[0])
    embedding = jax.tree.map(lambda x: x[batch, node], tree.embeddings)
    data: CertaintyData = tree.extra_data
    return tree.replace(extra_data=data.replace(ended=data.ended.at[batch, node].set(ended_fn(embedding))))


def _after_simulation(tree: mctx.Tree, sim: jax.Array, ended_fn: EndedFn | None) -> mctx.Tree:
    """Scans the node made by simulation `sim` (index sim + 1) and bounds its path to the root again."""
    new_node = jnp.full(tree.node_values.shape[:1], sim + 1, jnp.int32)
    if ended_fn is not None:
        tree = _scan(tree, new_node, ended_fn)
    return propagate(tree, new_node)


def _map_tree(f: Callable[[mctx.Tree], mctx.Tree], loop_state: Any) -> Any:
    return jax.tree.map(lambda x: f(x) if isinstance(x, mctx.Tree) else x, loop_state,
                        is_leaf=lambda x: isinstance(x, mctx.Tree))


def certainty_loop_fn(loop_fn: mctx.LoopFn, ended_fn: EndedFn | None) -> mctx.LoopFn:
    """A `loop_fn` for the search that scans the root before the first simulation (where there is an `ended_fn`)
    and runs `_after_simulation` after each; the PRNG stream is untouched."""

    def run(lower: Any, upper: Any, body_fun: Any, init_val: Any) -> Any:
        def body(sim: jax.Array, loop_state: Any) -> Any:
            return _map_tree(lambda t: _after_simulation(t, sim, ended_fn), body_fun(sim, loop_state))

        if ended_fn is not None:
            root = jnp.full((), mctx.Tree.ROOT_INDEX, jnp.int32)
            init_val = _map_tree(lambda t: propagate(_scan(t, jnp.broadcast_to(root, t.node_values.shape[:1]),
                                                           ended_fn), jnp.broadcast_to(root, t.node_values.shape[:1])),
                                 init_val)
        return loop_fn(lower, upper, body, init_val)

    return run


@dataclasses.dataclass(frozen=True)
class Certainty:
    """Certainty propagation as a `SearchExtension` of the policies (`azjax.search.policies`). `ended_fn`: scan
    each node's moves for those that end the game when it is expanded (None: a finished game is known when the
    search visits it)."""

    ended_fn: EndedFn | None = None

    def interior_selection(self, normal_fn: mctx.InteriorActionSelectionFn) -> mctx.InteriorActionSelectionFn:
        return normal_fn

    def extra_data(self, batch_size: int, num_simulations: int, num_actions: int,
                   root_gumbel: jax.Array | None) -> CertaintyData:
        return init_certainty_data(batch_size, num_simulations, num_actions, self.ended_fn is not None, root_gumbel)

    def loop_fn(self, loop_fn: mctx.LoopFn) -> mctx.LoopFn:
        return certainty_loop_fn(loop_fn, self.ended_fn)


def certain_output(out: mctx.PolicyOutput) -> mctx.PolicyOutput:
    """The search's move and policy target in the light of its proofs, over the tree's root children [B, A].

    Where a root child is a proven win the move is one (one whose move ends the game first, then the search's
    favourite among them) and the target is spread over them (by the search's weights, every proven win at least
    a little). Elsewhere the proven losses leave the target while any other move remains (the other legal moves
    share it evenly where the search weighed none of them), and a chosen move that is one gives way to the best
    other visited move by the target (the best other legal move where none was visited). The caller makes PUCT's
    `action` its most visited move first (`run_search`), so that the move is deterministic for both kinds."""
    tree = out.search_tree
    root = jnp.full(tree.node_values.shape[:1], mctx.Tree.ROOT_INDEX, jnp.int32)
    children = child_bounds(tree, root)
    win = children.legal & (children.lower >= 1.0)
    loss = children.legal & (children.upper <= -1.0)
    quick_win = win & children.ends_game
    best = jnp.where(quick_win.any(axis=-1, keepdims=True), quick_win, win)
    has_win = win.any(axis=-1, keepdims=True)
    avoid = loss & (children.legal & ~loss).any(axis=-1, keepdims=True)

    safe = children.legal & ~avoid
    weights = out.action_weights
    weights = jnp.where(has_win, jnp.where(best, jnp.maximum(weights, jnp.finfo(weights.dtype).tiny), 0.0),
                        jnp.where(avoid, 0.0, weights))
    total = weights.sum(axis=-1, keepdims=True)
    # PUCT's visits may weigh no safe move at all (every visited move lost): the safe ones then share the target.
    weights = jnp.where(total > 0, weights / jnp.where(total > 0, total, 1.0),
                        safe / jnp.maximum(safe.sum(axis=-1, keepdims=True), 1))

    visited = tree.children_visits[:, mctx.Tree.ROOT_INDEX] > 0
    fallback = jnp.where((safe & visited).any(axis=-1, keepdims=True), safe & visited, safe)
    fallback_action = jnp.argmax(jnp.where(fallback, weights, -jnp.inf), axis=-1)
    win_action = jnp.argmax(jnp.where(best, weights, -jnp.inf), axis=-1)
    chosen = out.action.astype(jnp.int32)
    chosen_avoided = jnp.take_along_axis(avoid, chosen[:, None], axis=1)[:, 0]
    action = jnp.where(has_win[:, 0], win_action, jnp.where(chosen_avoided, fallback_action, chosen))
    return out.replace(action=action.astype(jnp.int32), action_weights=weights)
