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

The policies below are `mctx.muzero_policy` / `mctx.gumbel_muzero_policy` step for step, run on
`azjax.search.core.search` (mctx's loop with a backup that does not touch the whole tree per step).
With `n_scl=None`, or when contempt never triggers (n_scl at least the simulation budget), they give
mctx's policy outputs exactly: the same PRNG splits, noise, tree, action and action_weights.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np

from azjax.search.core import search

__all__ = [
    "ContemptData",
    "ContemptStats",
    "contempt_gumbel_muzero_policy",
    "contempt_loop_fn",
    "contempt_muzero_policy",
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
        raise TypeError("not a search-contempt tree (n_scl=None runs mctx's plain search)")
    return ContemptStats(frozen=data.frozen, frozen_counts=data.frozen_counts, depth=data.depth)


def _check_n_scl(n_scl: NScl) -> jax.Array:
    """n_scl as an int32 scalar; a concrete value must be an integer >= 1."""
    if isinstance(n_scl, bool | np.bool_):
        raise TypeError(f"n_scl must be an integer >= 1 or None, got {n_scl!r}")
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


# ---------------------------------------------------------------- mctx's private helpers (faithful copies)


def _mask_invalid_actions(logits: jax.Array, invalid_actions: jax.Array | None) -> jax.Array:
    """mctx `policies._mask_invalid_actions`: invalid actions get the lowest finite logit."""
    if invalid_actions is None:
        return logits
    chex.assert_equal_shape([logits, invalid_actions])
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    min_logit = jnp.finfo(logits.dtype).min
    return jnp.where(invalid_actions, min_logit, logits)


def _get_logits_from_probs(probs: jax.Array) -> jax.Array:
    """mctx `policies._get_logits_from_probs`."""
    tiny = jnp.finfo(probs.dtype).tiny
    return jnp.log(jnp.maximum(probs, tiny))


def _add_dirichlet_noise(
    rng_key: chex.PRNGKey, probs: jax.Array, *, dirichlet_alpha: chex.Numeric, dirichlet_fraction: chex.Numeric
) -> jax.Array:
    """mctx `policies._add_dirichlet_noise`: P' = (1 - eps) P + eps Dir(alpha), per row of probs [B, A]."""
    chex.assert_rank(probs, 2)
    chex.assert_type([dirichlet_alpha, dirichlet_fraction], float)
    batch_size, num_actions = probs.shape
    noise = jax.random.dirichlet(
        rng_key, alpha=jnp.full([num_actions], fill_value=dirichlet_alpha), shape=(batch_size,)
    )
    return (1 - dirichlet_fraction) * probs + dirichlet_fraction * noise


def _apply_temperature(logits: jax.Array, temperature: chex.Numeric) -> jax.Array:
    """mctx `policies._apply_temperature`: logits / temperature, temperature 0 allowed."""
    logits = logits - jnp.max(logits, keepdims=True, axis=-1)
    tiny = jnp.finfo(logits.dtype).tiny
    return logits / jnp.maximum(tiny, temperature)


def _score_considered(
    considered_visit: jax.Array,
    gumbel: jax.Array,
    logits: jax.Array,
    normalized_qvalues: jax.Array,
    visit_counts: jax.Array,
) -> jax.Array:
    """mctx `seq_halving.score_considered`."""
    low_logit = -1e9
    logits = logits - jnp.max(logits, keepdims=True, axis=-1)
    penalty = jnp.where(visit_counts == considered_visit, 0, -jnp.inf)
    chex.assert_equal_shape([gumbel, logits, normalized_qvalues, penalty])
    return jnp.maximum(low_logit, gumbel + logits + normalized_qvalues) + penalty


def _masked_argmax(to_argmax: jax.Array, invalid_actions: jax.Array | None) -> jax.Array:
    """mctx `action_selection.masked_argmax`."""
    if invalid_actions is not None:
        chex.assert_equal_shape([to_argmax, invalid_actions])
        to_argmax = jnp.where(invalid_actions, -jnp.inf, to_argmax)
    return jnp.argmax(to_argmax, axis=-1).astype(jnp.int32)


# ---------------------------------------------------------------- policies


def _search(params: Any, rng_key: chex.PRNGKey, root: mctx.RootFnOutput, recurrent_fn: mctx.RecurrentFn,
            root_select: Any, interior_select: mctx.InteriorActionSelectionFn, num_simulations: int,
            invalid_actions: jax.Array | None, max_depth: int | None, loop_fn: mctx.LoopFn, n_scl: NScl | None,
            root_gumbel: jax.Array | None = None) -> mctx.Tree:
    """The search of both policies: the plain one (`n_scl` None; mctx's Gumbel extra data where there is a
    `root_gumbel`), or with the interior selection, the tree's extra data and the loop wrapped for contempt."""
    if n_scl is None:
        extra_data = None if root_gumbel is None else mctx.GumbelMuZeroExtraData(root_gumbel=root_gumbel)
    else:
        batch_size, num_actions = root.prior_logits.shape
        interior_select = contempt_selection_fn(interior_select)
        extra_data = init_contempt_data(batch_size, num_simulations, num_actions, n_scl, root_gumbel=root_gumbel)
        loop_fn = contempt_loop_fn(loop_fn)
    return search(params=params, rng_key=rng_key, root=root, recurrent_fn=recurrent_fn,
                  root_action_selection_fn=root_select, interior_action_selection_fn=interior_select,
                  num_simulations=num_simulations, max_depth=max_depth, invalid_actions=invalid_actions,
                  extra_data=extra_data, loop_fn=loop_fn)



def contempt_muzero_policy(
    params: Any,
    rng_key: chex.PRNGKey,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    invalid_actions: jax.Array | None = None,
    max_depth: int | None = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
    *,
    n_scl: NScl | None,
    qtransform: Any = mctx.qtransform_by_parent_and_siblings,
    dirichlet_fraction: chex.Numeric = 0.25,
    dirichlet_alpha: chex.Numeric = 0.3,
    pb_c_init: chex.Numeric = 1.25,
    pb_c_base: chex.Numeric = 19652,
    temperature: chex.Numeric = 1.0,
) -> mctx.PolicyOutput:
    """`mctx.muzero_policy` (PUCT, root Dirichlet noise) with search-contempt at odd depths.

    Arguments and return value are `mctx.muzero_policy`'s (B = batch, A = actions): `root` with
    prior_logits [B, A], value [B]; `invalid_actions` [B, A] (True = invalid); returns `action` [B]
    sampled from visits^(1/temperature), `action_weights` [B, A] = root visit distribution and
    `search_tree` (its `extra_data` is a `ContemptData`; see `contempt_stats`).

    n_scl: visits after which an opponent (odd-depth) node freezes its child visit distribution
      (an int >= 1, or an int32 scalar array, which may be traced). None: the plain search.
    """
    rng_key, dirichlet_rng_key, search_rng_key = jax.random.split(rng_key, 3)
    noisy_logits = _get_logits_from_probs(
        _add_dirichlet_noise(
            dirichlet_rng_key,
            jax.nn.softmax(root.prior_logits),
            dirichlet_fraction=dirichlet_fraction,
            dirichlet_alpha=dirichlet_alpha,
        )
    )
    root = root.replace(prior_logits=_mask_invalid_actions(noisy_logits, invalid_actions))

    normal_fn = functools.partial(
        mctx.muzero_action_selection, pb_c_base=pb_c_base, pb_c_init=pb_c_init, qtransform=qtransform
    )
    search_tree = _search(params, search_rng_key, root, recurrent_fn, functools.partial(normal_fn, depth=0),
                          normal_fn, num_simulations, invalid_actions, max_depth, loop_fn, n_scl)

    summary = search_tree.summary()
    action_weights = summary.visit_probs
    action_logits = _apply_temperature(_get_logits_from_probs(action_weights), temperature)
    action = jax.random.categorical(rng_key, action_logits)
    return mctx.PolicyOutput(action=action, action_weights=action_weights, search_tree=search_tree)


def contempt_gumbel_muzero_policy(
    params: Any,
    rng_key: chex.PRNGKey,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    invalid_actions: jax.Array | None = None,
    max_depth: int | None = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
    *,
    n_scl: NScl | None,
    qtransform: Any = mctx.qtransform_completed_by_mix_value,
    max_num_considered_actions: int = 16,
    gumbel_scale: chex.Numeric = 1.0,
) -> mctx.PolicyOutput:
    """`mctx.gumbel_muzero_policy` (Gumbel root, sequential halving) with search-contempt at odd depths.

    Arguments and return value are `mctx.gumbel_muzero_policy`'s: `action` [B] is the best considered
    root action by gumbel + logits + completed Q, `action_weights` [B, A] = softmax(logits +
    completed Q), `search_tree` carries a `ContemptData` (with `root_gumbel` [B, A]).

    n_scl: as in `contempt_muzero_policy`; None: the plain search.
    """
    root = root.replace(prior_logits=_mask_invalid_actions(root.prior_logits, invalid_actions))

    rng_key, gumbel_rng = jax.random.split(rng_key)
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_rng, shape=root.prior_logits.shape, dtype=root.prior_logits.dtype)

    root_select = functools.partial(mctx.gumbel_muzero_root_action_selection, num_simulations=num_simulations,
                                    max_num_considered_actions=max_num_considered_actions, qtransform=qtransform)
    interior_select = functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform)
    search_tree = _search(params, rng_key, root, recurrent_fn, root_select, interior_select, num_simulations,
                          invalid_actions, max_depth, loop_fn, n_scl, root_gumbel=gumbel)
    summary = search_tree.summary()

    considered_visit = jnp.max(summary.visit_counts, axis=-1, keepdims=True)
    completed_qvalues = jax.vmap(qtransform, in_axes=[0, None])(search_tree, search_tree.ROOT_INDEX)
    to_argmax = _score_considered(considered_visit, gumbel, root.prior_logits, completed_qvalues, summary.visit_counts)
    action = _masked_argmax(to_argmax, invalid_actions)

    completed_search_logits = _mask_invalid_actions(root.prior_logits + completed_qvalues, invalid_actions)
    action_weights = jax.nn.softmax(completed_search_logits)
    return mctx.PolicyOutput(action=action, action_weights=action_weights, search_tree=search_tree)
