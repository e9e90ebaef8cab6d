"""Search-contempt (docs/methods.md section 1) as a small extension of mctx.

Search-contempt is an asymmetric MCTS: the side to move at the root searches with the normal rule
(PUCT or Gumbel), while the opponent's choices are frozen after a few visits. With depth d(s) counted
from the search root (root = 0), the *opponent nodes* are the odd-depth nodes. For an opponent node s
with child visit counts N(s, a):

  * while  sum_b N(s, b) < n_scl  the normal selection rule picks the child;
  * when   sum_b N(s, b) = n_scl  (completed visits) the counts are frozen: N_scl(s, a) = N(s, a);
  * every later visit through s samples its child independently, with replacement:

        P_mcts(s, a) = N_scl(s, a) / n_scl,

    so a child with N_scl(s, a) = 0 is never visited again, and N_scl never changes afterwards.

Even-depth nodes (the root included) always use the normal rule, and the backup is mctx's plain
averaging, so a frozen node's Q tends to the mean of its children's values under the frozen mix.
mctx runs one simulation per tree at a time, and a node's child-visit sum grows by exactly one per
simulation through it, so every opponent node gets exactly n_scl normal visits before it freezes.

How it plugs into mctx (`mctx.search`'s arguments and mctx's selection functions):

  * `Tree.extra_data` is a `ContemptData` holding, per tree and node, the frozen flag [B, N], the
    frozen counts [B, N, A] and the node depth [B, N] (N = num_simulations + 1 nodes; depth -1 =
    node not created yet), plus `root_gumbel` [B, A] which mctx's Gumbel root selection reads.
  * The interior selection function wraps the normal rule and, at a frozen node, returns a sample
    from N_scl(s, .) instead.
  * A `loop_fn` wraps mctx's simulation body: after each simulation it records the depth of the
    node just created (index sim + 1) and freezes every odd-depth, not-yet-frozen node whose
    child-visit sum reached n_scl. Only the nodes on the simulation's path can change, so it walks
    from the new node's parent to the root (O(depth * A) per tree); when no node was created (a
    `max_depth` cut-off, where the path is not known) it falls back to a scan of the whole tree.

`Contempt` makes these a `SearchExtension` of AlphaZero's policies (`azjax.search.policies`, mctx's step for
step), and `contempt_muzero_policy` / `contempt_gumbel_muzero_policy` are those policies with it. When contempt
never triggers (n_scl at least the simulation budget) they give mctx's policy outputs exactly: the same PRNG
splits, noise, tree, action and action_weights. Plain AlphaZero (n_scl off) runs the policies without it and
never enters this module.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np

from azjax.search.policies import gumbel_muzero_policy, muzero_policy

__all__ = [
    "Contempt",
    "ContemptData",
    "ContemptStats",
    "contempt_gumbel_muzero_policy",
    "contempt_loop_fn",
    "contempt_muzero_policy",
    "contempt_on",
    "contempt_selection_fn",
    "contempt_stats",
    "init_contempt_data",
]

NScl = int | jax.Array


@chex.dataclass(frozen=True)
class ContemptData:
    """Per-node search-contempt state, carried in `mctx.Tree.extra_data` (all leaves lead with B).

    Attributes:
      frozen: bool [B, N]: the node's child visit counts are frozen (only odd-depth nodes).
      frozen_counts: int32 [B, N, A]: N_scl(s, a); zero for nodes that are not frozen.
      depth: int32 [B, N]: the node's depth (root 0); -1 for nodes not created yet.
      n_scl: int32 [B]: the freezing threshold (an array so that it may be traced).
      root_gumbel: float [B, A] Gumbel noise read by mctx's Gumbel root selection, or None (PUCT).
    """

    frozen: jax.Array
    frozen_counts: jax.Array
    depth: jax.Array
    n_scl: jax.Array
    root_gumbel: jax.Array | None = None


class ContemptStats(NamedTuple):
    """Per-node search-contempt read-out of a finished search (see `contempt_stats`)."""

    frozen: jax.Array  # bool [B, N]
    frozen_counts: jax.Array  # int32 [B, N, A]
    depth: jax.Array  # int32 [B, N], -1 for unused nodes


def contempt_stats(tree: mctx.Tree) -> ContemptStats:
    """Frozen flags [B, N], frozen counts N_scl [B, N, A] and node depths [B, N] of a contempt search.

    `tree` is `PolicyOutput.search_tree` of `contempt_muzero_policy` / `contempt_gumbel_muzero_policy`
    with an integer `n_scl`.
    """
    data = tree.extra_data
    if not isinstance(data, ContemptData):
        raise TypeError("not a search-contempt tree (n_scl=0 runs mctx's plain search)")
    return ContemptStats(frozen=data.frozen, frozen_counts=data.frozen_counts, depth=data.depth)


def contempt_on(n_scl: NScl) -> bool:
    """Whether `n_scl` switches search-contempt on: every value but the off value 0 (a concrete integer). A traced
    array is on: a sweep traces n_scl only in a program whose runs all have contempt on."""
    return not (isinstance(n_scl, int | np.integer) and not isinstance(n_scl, bool) and n_scl == 0)


def _check_n_scl(n_scl: NScl) -> jax.Array:
    """n_scl as an int32 scalar; a concrete value must be an integer >= 1."""
    if isinstance(n_scl, bool | np.bool_):
        raise TypeError(f"n_scl must be an integer >= 1, got {n_scl!r}")
    if isinstance(n_scl, int | np.integer):
        if n_scl < 1:
            raise ValueError(f"n_scl must be >= 1, got {n_scl}")
        return jnp.asarray(n_scl, jnp.int32)
    n_scl = jnp.asarray(n_scl)
    if n_scl.ndim != 0 or not jnp.issubdtype(n_scl.dtype, jnp.integer):
        raise TypeError(f"n_scl must be an integer scalar, got {n_scl.dtype}{list(n_scl.shape)}")
    return n_scl.astype(jnp.int32)


def init_contempt_data(
    batch_size: int,
    num_simulations: int,
    num_actions: int,
    n_scl: NScl,
    root_gumbel: jax.Array | None = None,
) -> ContemptData:
    """Empty contempt state for a tree of `num_simulations + 1` nodes: only the root (depth 0) exists."""
    num_nodes = num_simulations + 1
    n_scl = _check_n_scl(n_scl)
    return ContemptData(
        frozen=jnp.zeros((batch_size, num_nodes), bool),
        frozen_counts=jnp.zeros((batch_size, num_nodes, num_actions), jnp.int32),
        depth=jnp.full((batch_size, num_nodes), -1, jnp.int32).at[:, mctx.Tree.ROOT_INDEX].set(0),
        n_scl=jnp.broadcast_to(n_scl, (batch_size,)),
        root_gumbel=root_gumbel,
    )


# ---------------------------------------------------------------- selection


def contempt_selection_fn(normal_fn: mctx.InteriorActionSelectionFn) -> mctx.InteriorActionSelectionFn:
    """Wraps an interior selection rule: at a frozen node, sample a ~ N_scl(s, a) / n_scl instead.

    The wrapped function has mctx's interior signature `(rng_key, tree, node_index, depth)` on an
    *unbatched* tree. `normal_fn` always gets the unchanged `rng_key`, so unfrozen nodes select
    exactly as without contempt. Only odd-depth nodes are ever frozen (see `contempt_loop_fn`), and a
    node is frozen iff its frozen counts are non-zero (they sum to n_scl >= 1).
    """

    def select(rng_key: chex.PRNGKey, tree: mctx.Tree, node_index: jax.Array, depth: jax.Array) -> jax.Array:
        action = normal_fn(rng_key, tree, node_index, depth)
        data: ContemptData = tree.extra_data
        cumulative = jnp.cumsum(data.frozen_counts[node_index])  # [A]
        total = cumulative[-1]  # n_scl at a frozen node, 0 elsewhere
        is_frozen = total > 0
        # Inverse CDF: x uniform on {0, ..., n_scl - 1} and a = #{b : cumsum_b <= x}, so that
        # P(a) = N_scl(s, a) / n_scl (up to float32 resolution of the uniform draw) and a child with
        # N_scl(s, a) = 0 is never drawn. One uniform per step (a categorical would draw A Gumbels).
        # The key is shared with `normal_fn` (PUCT's tie-break noise) on purpose: at each step only
        # one of the two results is used, and mctx gives every step of every simulation its own key,
        # so the draws stay independent; a fold_in would add a hash per step (~40% of the overhead).
        u = jax.random.uniform(rng_key)
        x = jnp.minimum(jnp.floor(u * total), total - 1)
        sampled = jnp.sum(cumulative <= x).astype(jnp.int32)
        return jnp.where(is_frozen, sampled, action).astype(jnp.int32)

    return select


# ---------------------------------------------------------------- per-simulation bookkeeping


def _is_opponent(depth: jax.Array) -> jax.Array:
    return (depth > 0) & (depth % 2 == 1)


def _freeze_along_path(tree: mctx.Tree, data: ContemptData, start: jax.Array) -> ContemptData:
    """Unbatched: walks from node `start` up to the root and freezes the node that reached n_scl.

    At most one node per path can reach n_scl in a simulation: child-visit sums grow by one per
    simulation along the path, strictly decrease from a node to its descendants, and a node freezes
    as soon as its sum reaches n_scl. So the walk carries a single hit and writes it once.
    """

    def cond(state: tuple[jax.Array, jax.Array]) -> jax.Array:
        return state[0] != mctx.Tree.NO_PARENT

    def body(state: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        node, hit_node = state
        hit = _is_opponent(data.depth[node]) & ~data.frozen[node] & (jnp.sum(tree.children_visits[node]) >= data.n_scl)
        return tree.parents[node], jnp.where(hit, node, hit_node)

    _, hit_node = jax.lax.while_loop(cond, body, (start, jnp.int32(mctx.Tree.NO_PARENT)))
    hit = hit_node != mctx.Tree.NO_PARENT
    node = jnp.maximum(hit_node, 0)
    counts = jnp.where(hit, tree.children_visits[node], data.frozen_counts[node])
    return data.replace(
        frozen=data.frozen.at[node].set(data.frozen[node] | hit),
        frozen_counts=data.frozen_counts.at[node].set(counts),
    )


def _freeze_all(tree: mctx.Tree, data: ContemptData) -> ContemptData:
    """Batched: freezes every odd-depth, unfrozen node whose child-visit sum reached n_scl."""
    hit = (
        _is_opponent(data.depth)
        & ~data.frozen
        & (jnp.sum(tree.children_visits, axis=-1) >= data.n_scl[:, None])
    )
    return data.replace(
        frozen=data.frozen | hit,
        frozen_counts=jnp.where(hit[..., None], tree.children_visits, data.frozen_counts),
    )


def _after_simulation(tree: mctx.Tree, sim: jax.Array) -> mctx.Tree:
    """Records the depth of the node made by simulation `sim` (index sim + 1) and freezes nodes."""
    data: ContemptData = tree.extra_data
    new_node = sim + 1
    parent = tree.parents[:, new_node]  # [B]; NO_PARENT where no node was created (max_depth cut-off)
    created = parent != mctx.Tree.NO_PARENT
    parent_depth = jnp.take_along_axis(data.depth, jnp.maximum(parent, 0)[:, None], axis=1)[:, 0]
    depth = data.depth.at[:, new_node].set(jnp.where(created, parent_depth + 1, data.depth[:, new_node]))
    data = data.replace(depth=depth)
    # The new node has no child visits yet, so the walk starts at its parent.
    data = jax.lax.cond(
        jnp.all(created),
        lambda d: jax.vmap(_freeze_along_path)(tree, d, parent),
        lambda d: _freeze_all(tree, d),
        data,
    )
    return tree.replace(extra_data=data)


def contempt_loop_fn(loop_fn: mctx.LoopFn = jax.lax.fori_loop) -> mctx.LoopFn:
    """A `loop_fn` for `mctx.search` that runs `_after_simulation` after each simulation.

    It wraps the body the search hands to its loop function and runs it with `loop_fn` (same
    interface as `jax.lax.fori_loop`). The loop state is left untouched apart from the `Tree` in it,
    so the PRNG stream is exactly mctx's.
    """

    def run(lower: Any, upper: Any, body_fun: Any, init_val: Any) -> Any:
        def body(sim: jax.Array, loop_state: Any) -> Any:
            loop_state = body_fun(sim, loop_state)
            return jax.tree.map(
                lambda x: _after_simulation(x, sim) if isinstance(x, mctx.Tree) else x,
                loop_state,
                is_leaf=lambda x: isinstance(x, mctx.Tree),
            )

        return loop_fn(lower, upper, body, init_val)

    return run


# ---------------------------------------------------------------- the policies with search-contempt


@dataclasses.dataclass(frozen=True)
class Contempt:
    """Search-contempt as a `SearchExtension` of the policies (`azjax.search.policies`): the interior selection
    wrapped (`contempt_selection_fn`), the tree's extra data a `ContemptData`, the loop wrapped
    (`contempt_loop_fn`). `n_scl`: an int >= 1, or an int32 scalar array, which may be traced."""

    n_scl: NScl

    def interior_selection(self, normal_fn: mctx.InteriorActionSelectionFn) -> mctx.InteriorActionSelectionFn:
        return contempt_selection_fn(normal_fn)

    def extra_data(self, batch_size: int, num_simulations: int, num_actions: int,
                   root_gumbel: jax.Array | None) -> ContemptData:
        return init_contempt_data(batch_size, num_simulations, num_actions, self.n_scl, root_gumbel=root_gumbel)

    def loop_fn(self, loop_fn: mctx.LoopFn) -> mctx.LoopFn:
        return contempt_loop_fn(loop_fn)


def contempt_muzero_policy(*args: Any, n_scl: NScl, **kwargs: Any) -> mctx.PolicyOutput:
    """`mctx.muzero_policy` (`azjax.search.policies.muzero_policy`, same arguments) with search-contempt at odd
    depths: `search_tree.extra_data` is a `ContemptData` (see `contempt_stats`).

    n_scl: visits after which an opponent (odd-depth) node freezes its child visit distribution
      (an int >= 1, or an int32 scalar array, which may be traced). 0: off, the plain search.
    """
    return muzero_policy(*args, extension=Contempt(n_scl) if contempt_on(n_scl) else None, **kwargs)


def contempt_gumbel_muzero_policy(*args: Any, n_scl: NScl, **kwargs: Any) -> mctx.PolicyOutput:
    """`mctx.gumbel_muzero_policy` (`azjax.search.policies.gumbel_muzero_policy`, same arguments) with
    search-contempt at odd depths: `search_tree.extra_data` is a `ContemptData` (with `root_gumbel` [B, A]).

    n_scl: as in `contempt_muzero_policy`; 0: off, the plain search.
    """
    return gumbel_muzero_policy(*args, extension=Contempt(n_scl) if contempt_on(n_scl) else None, **kwargs)
