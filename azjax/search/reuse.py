"""Tree reuse (lc0, KataGo): the subtree under the moves played becomes the next search's tree.

    tree, size = subtree(out.search_tree, plies, num_nodes)       # plies [B, P]: moves from the root, -1 = none
    out = reused_muzero_policy(params, key, tree, size, root, recurrent_fn, invalid_actions=invalid,
                               num_simulations=S, descended=plies[:, 0] >= 0)

`subtree` re-indexes the nodes under the new root as a tree of `num_nodes` nodes: the new root is node 0, its
descendants follow in their old order (a node's parent always has a smaller index, in mctx's trees and in these),
and every per-node statistic is kept: visits, raw and backed-up values, children's visits, values, priors, rewards
and discounts, and the embeddings (the game states). The subtree is found with fixed shapes: every node walks up
its parents at once (a `while_loop` as deep as the tree) to see whether it meets the new root, and a cumulative sum
over the members gives their new indices.

`continue_search` is `azjax.search.core.search`'s loop started from such a tree: simulation k of game b expands
node first_free[b] + k, and game b runs its own number of simulations (the others' writes are dropped meanwhile).

Budget (KataGo's maxVisits, lc0's visits limit): a search of `num_simulations` S ends, as a fresh one does, with
S + 1 root visits in a tree of S + 1 nodes; a reused root that arrives with n visits runs S + 1 - n new
simulations. Each reused node was made by one simulation through the new root (or is the root), so the subtree
has at most n nodes and the new ones fit. `subtree` keeps nothing when the subtree has more nodes than the tree it
is asked for; a caller that wants it all searches on in the old tree's size with a smaller `budget` (the engine
does, after an analysis has grown its tree past the engine's visits).

Which searches reuse (`reusable`): PUCT and Gumbel MuZero, without search-contempt and with a plain evaluator.
  * PUCT (`reused_muzero_policy`): the root's prior is the node's stored network prior, given the root's treatment
    again (Dirichlet noise with `dirichlet_fraction` > 0: fresh noise; none for the engines' evaluation search). A
    root kept in place (no move played, e.g. an analysis growing its tree) keeps the prior it was searched with.
  * Gumbel MuZero (`reused_gumbel_muzero_policy`): sequential halving plans the root's visits from zero (mctx's
    `gumbel_muzero_root_action_selection` visits the considered actions whose count is the phase's, and reads the
    simulation's index off the root's visit counts), so a root that arrived with the subtree's uneven counts would
    match no phase. Reuse there keeps everything below the root and starts the root afresh: its own visits and
    value, and its counts and values per child, are those of a new root (1 visit, the network's value, none per
    child); its children stay in the tree with their own statistics and subtrees. The search then runs its
    num_simulations root visits from a new Gumbel draw, exactly as planned, and the first visit to a kept child
    reads that child's value backed up over all its visits (not one new leaf's network value) and searches on below
    it. So the budget is num_simulations new simulations, and the tree needs room for the kept subtree besides them:
    `tree_size` gives Gumbel trees 2 x num_simulations + 1 nodes, and a subtree with more than num_simulations + 1
    nodes is not kept.
  * Search-contempt: the frozen (opponent) nodes are the odd-depth ones; one ply down they are the even ones.
  * A `ParentAwareEvaluator` (SAI) values a node in the light of its root's context; a kept child was valued as a
    child, not as a root.
"""

from __future__ import annotations

import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx
from mctx._src import action_selection as mctx_action_selection
from mctx._src import search as mctx_search

from azjax.games import Game
from azjax.search.core import backward
from azjax.search.layout import node_moves, slot_of
from azjax.search.policies import (
    gumbel_root_selection,
    mask_invalid_actions,
    masked_argmax,
    noisy_root_logits,
    score_considered,
    visit_policy_output,
)

__all__ = ["continue_search", "empty_like_search", "reusable", "reused_gumbel_muzero_policy", "reused_muzero_policy",
           "subtree", "tree_size"]

NODE_FIELDS = ("node_visits", "raw_values", "node_values", "parents", "action_from_parent", "children_index",
               "children_prior_logits", "children_visits", "children_rewards", "children_discounts",
               "children_values")
# The value of a node no search has reached (mctx's `instantiate_tree_from_root`); 0 for the other fields.
EMPTY = {"parents": mctx.Tree.NO_PARENT, "action_from_parent": mctx.Tree.NO_PARENT,
         "children_index": mctx.Tree.UNVISITED}


def reusable(kind: str, n_scl: int, parent_aware: bool, certainty: str = "off") -> bool:
    """Whether a search of this kind can continue a kept tree (see the module docstring for why not with
    search-contempt (n_scl > 0) or a parent-aware evaluator; certainty propagation's bounds are not carried into a
    kept subtree either)."""
    return kind in ("puct", "gumbel") and n_scl == 0 and not parent_aware and certainty == "off"


def tree_size(kind: str, num_simulations: int) -> int:
    """The nodes of a reusing search's tree: PUCT's budget counts the kept visits (num_simulations + 1 nodes); a
    Gumbel root runs all its num_simulations afresh, beside a kept subtree of up to num_simulations + 1 nodes."""
    return num_simulations + 1 if kind == "puct" else 2 * num_simulations + 1


def _descend(tree: mctx.Tree, plies: jax.Array, game: Game | None = None) -> jax.Array:
    """int32 [B]: the node reached from the root by `plies` ([B, P] game actions, -1 = stay); -1 where a move
    leads to a child the search never expanded (or is no legal move there). `game`: needed where the game is
    searched over slots (`azjax.search.layout`), whose slots the actions are looked up in."""
    batch = jnp.arange(plies.shape[0])
    node = jnp.zeros(plies.shape[0], jnp.int32)
    for p in range(plies.shape[1]):  # P is 1 or 2: a static unroll over plies, not over games
        action = plies[:, p]
        slot = action if game is None else slot_of(node_moves(game, tree, node), action)
        child = jnp.where(slot >= 0, tree.children_index[batch, jnp.maximum(node, 0), jnp.maximum(slot, 0)], -1)
        node = jnp.where((action < 0) | (node < 0), node, child)
    return node


def subtree(tree: mctx.Tree, plies: jax.Array, num_nodes: int | None = None,
            game: Game | None = None) -> tuple[mctx.Tree, jax.Array]:
    """The subtree under the moves `plies` (int32 [B, P], from the root; -1 = no move: trailing -1s stay at the
    node reached, so one compiled function serves 0, 1 and 2 plies) as a tree of `num_nodes` nodes (default:
    `tree`'s) whose root is that node. `game` (its actions are looked up in a tree searched over slots) is needed
    for a game with a `search_width`.

    Returns (tree, size): size int32 [B] is the number of nodes kept, packed into nodes [0, size); 0 (an empty
    tree) where the node reached was never expanded or visited, or its subtree has more than `num_nodes` nodes.
    The root's parent and action are NO_PARENT; `root_invalid_actions` and `extra_data` are left as they are (the
    search that continues sets them).
    """
    batch_size, old_nodes = tree.node_visits.shape
    num_nodes = old_nodes if num_nodes is None else int(num_nodes)
    batch = jnp.arange(batch_size)
    reached = _descend(tree, plies.astype(jnp.int32), game)
    root = jnp.maximum(reached, 0)

    # Every node walks up at once; it belongs to the subtree iff it meets `root`. Ancestors have smaller indices,
    # so a walk stops once it is at or below the root's index (or at NO_PARENT): as many steps as the tree's depth.
    def above(cur: jax.Array) -> jax.Array:
        return cur > root[:, None]

    def climb(cur: jax.Array) -> jax.Array:
        return jnp.where(above(cur), jnp.take_along_axis(tree.parents, jnp.maximum(cur, 0), axis=1), cur)

    start = jnp.broadcast_to(jnp.arange(old_nodes, dtype=jnp.int32), (batch_size, old_nodes))
    member = jax.lax.while_loop(lambda cur: jnp.any(above(cur)), climb, start) == root[:, None]  # [B, N_old]
    count = member.sum(axis=1, dtype=jnp.int32)
    keep = (reached >= 0) & (tree.node_visits[batch, root] > 0) & (count <= num_nodes)
    member = member & keep[:, None]
    size = jnp.where(keep, count, 0)

    new_index = jnp.where(member, jnp.cumsum(member, axis=1, dtype=jnp.int32) - 1, -1)  # [B, N_old]
    # The inverse map: the old node of each new index (non-members scatter out of range and are dropped).
    old_of = jnp.zeros((batch_size, num_nodes), jnp.int32).at[batch[:, None], jnp.where(member, new_index, num_nodes)
                                                            ].set(start, mode="drop")
    used = jnp.arange(num_nodes)[None, :] < size[:, None]  # [B, N_new]

    def gather(x: jax.Array, empty: Any = 0) -> jax.Array:
        picked = x[batch[:, None], old_of]
        mask = used.reshape(used.shape + (1,) * (picked.ndim - 2))
        return jnp.where(mask, picked, jnp.asarray(empty, x.dtype))

    def renumber(index: jax.Array) -> jax.Array:
        """Old node indices ([B, N_new, ...], -1 = none) as new ones; a node outside the subtree is -1."""
        flat = index.reshape(batch_size, -1)
        new = jnp.take_along_axis(new_index, jnp.maximum(flat, 0), axis=1)
        return jnp.where(flat >= 0, new, flat).reshape(index.shape)

    fields = {name: gather(getattr(tree, name), EMPTY.get(name, 0)) for name in NODE_FIELDS}
    fields["parents"] = renumber(fields["parents"])  # the new root's parent is outside: NO_PARENT
    fields["children_index"] = renumber(fields["children_index"])
    is_root = jnp.arange(num_nodes)[None, :] == mctx.Tree.ROOT_INDEX
    fields["action_from_parent"] = jnp.where(is_root, mctx.Tree.NO_PARENT, fields["action_from_parent"])
    embeddings = jax.tree.map(gather, tree.embeddings)
    return tree.replace(**fields, embeddings=embeddings), size


def continue_search(
    params: Any,
    rng_key: chex.PRNGKey,
    tree: mctx.Tree,
    *,
    first_free: jax.Array,
    num_simulations: jax.Array,
    recurrent_fn: mctx.RecurrentFn,
    root_action_selection_fn: mctx.RootActionSelectionFn,
    interior_action_selection_fn: mctx.InteriorActionSelectionFn,
    max_depth: int | None = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
) -> mctx.Tree:
    """`azjax.search.core.search` from a tree that already holds nodes [0, first_free) ([B] int32 each):
    game b runs num_simulations[b] simulations, simulation k expanding node first_free[b] + k. The caller leaves
    room: first_free + num_simulations <= the tree's nodes. With first_free = 1 and num_simulations = S for every
    game, on the tree `mctx` instantiates from a root, it is `core.search` step for step (same PRNG use).

    The loop runs max(num_simulations) times; a game past its own count writes nowhere (its expansion goes to an
    out-of-range node under an out-of-range parent, both dropped, and its backup starts at the root)."""
    action_selection_fn = mctx_action_selection.switching_action_selection_wrapper(
        root_action_selection_fn=root_action_selection_fn,
        interior_action_selection_fn=interior_action_selection_fn,
    )
    batch_size, num_nodes = tree.node_visits.shape
    batch_range = jnp.arange(batch_size)
    max_depth = num_nodes - 1 if max_depth is None else max_depth
    first_free = jnp.asarray(first_free, jnp.int32)
    num_simulations = jnp.broadcast_to(jnp.asarray(num_simulations, jnp.int32), (batch_size,))

    def body_fun(sim: jax.Array, loop_state: tuple[jax.Array, mctx.Tree]) -> tuple[jax.Array, mctx.Tree]:
        rng_key, tree = loop_state
        rng_key, simulate_key, expand_key = jax.random.split(rng_key, 3)
        simulate_keys = jax.random.split(simulate_key, batch_size)
        parent_index, action = mctx_search.simulate(simulate_keys, tree, action_selection_fn, max_depth)
        next_node_index = tree.children_index[batch_range, parent_index, action]
        next_node_index = jnp.where(next_node_index == mctx.Tree.UNVISITED, first_free + sim, next_node_index)
        active = sim < num_simulations
        out_of_range = jnp.int32(num_nodes)
        tree = mctx_search.expand(params, expand_key, tree, recurrent_fn, jnp.where(active, parent_index, out_of_range),
                                  action, jnp.where(active, next_node_index, out_of_range))
        tree = backward(tree, jnp.where(active, next_node_index, mctx.Tree.ROOT_INDEX))
        return rng_key, tree

    _, tree = loop_fn(0, jnp.max(num_simulations), body_fun, (rng_key, tree))
    return tree


def empty_like_search(tree: Any) -> mctx.Tree:
    """A tree shaped as `tree` (a tree, or its `jax.eval_shape`) with no node visited, so nothing for `subtree` to
    keep: the previous tree of a first search, so that one compiled search serves the first move and the later
    ones."""
    return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), tree)


def reused_muzero_policy(
    params: Any,
    rng_key: chex.PRNGKey,
    tree: mctx.Tree,
    size: jax.Array,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    *,
    invalid_actions: jax.Array,
    descended: jax.Array,
    budget: jax.Array | None = None,
    qtransform: Any = mctx.qtransform_by_parent_and_siblings,
    dirichlet_fraction: chex.Numeric = 0.25,
    dirichlet_alpha: chex.Numeric = 0.3,
    pb_c_init: chex.Numeric = 1.25,
    pb_c_base: chex.Numeric = 19652,
    temperature: chex.Numeric = 1.0,
) -> mctx.PolicyOutput:
    """`mctx.muzero_policy` (as `azjax.search.policies.muzero_policy`: the same PRNG splits) continuing `tree`.

    Args:
      tree, size: `subtree`'s output, with num_simulations + 1 nodes; where size is 0 the search starts from `root`
        (the network's evaluation of the root state, [B]).
      invalid_actions: bool [B, A] at the root.
      descended: bool [B]: the root is a node below the kept tree's root (its stored prior is the network's and gets
        the root's noise); False keeps the prior of a root searched before (an analysis that grows its tree).
      budget: int32 [B], the root visits to reach (default num_simulations + 1, at most that): a tree bigger than
        the budget (kept from a longer search) is searched on to the budget only, or not at all where its root has
        more visits already.
    Returns mctx's PolicyOutput, from a tree whose root ends with max(budget, its kept visits) visits (fewer where a
    max_depth cut-off re-expanded a leaf of the kept tree).
    """
    rng_key, dirichlet_rng_key, search_rng_key = jax.random.split(rng_key, 3)
    noisy = functools.partial(noisy_root_logits, dirichlet_rng_key, invalid_actions=invalid_actions,
                              dirichlet_fraction=dirichlet_fraction, dirichlet_alpha=dirichlet_alpha)

    fresh = mctx_search.instantiate_tree_from_root(root.replace(prior_logits=noisy(root.prior_logits)),
                                                   num_simulations, root_invalid_actions=invalid_actions,
                                                   extra_data=None)
    kept = size > 0
    stored = tree.children_prior_logits[:, mctx.Tree.ROOT_INDEX]
    root_prior = jnp.where(descended[:, None], noisy(stored), stored)
    tree = tree.replace(children_prior_logits=tree.children_prior_logits.at[:, 0].set(root_prior),
                        root_invalid_actions=invalid_actions, extra_data=None)
    tree = _select_kept(kept, fresh, tree)

    interior = functools.partial(mctx.muzero_action_selection, pb_c_base=pb_c_base, pb_c_init=pb_c_init,
                                 qtransform=qtransform)
    budget = num_simulations + 1 if budget is None else jnp.minimum(budget, num_simulations + 1)
    # Each kept node was made by a simulation through the root (or is it), so size <= root visits and the new nodes
    # fit: size + budget - root visits <= budget.
    simulations = jnp.maximum(budget - tree.node_visits[:, mctx.Tree.ROOT_INDEX], 0)
    search_tree = continue_search(params, search_rng_key, tree, first_free=jnp.maximum(size, 1),
                                  num_simulations=simulations, recurrent_fn=recurrent_fn,
                                  root_action_selection_fn=functools.partial(interior, depth=0),
                                  interior_action_selection_fn=interior, max_depth=num_simulations)
    return visit_policy_output(rng_key, search_tree, temperature)


def _select_kept(kept: jax.Array, fresh: mctx.Tree, tree: mctx.Tree) -> mctx.Tree:
    """Per game, `tree` where `kept` ([B]) else `fresh`."""
    return jax.tree.map(lambda f, t: jnp.where(kept.reshape(kept.shape + (1,) * (f.ndim - 1)), t, f), fresh, tree)


def reused_gumbel_muzero_policy(
    params: Any,
    rng_key: chex.PRNGKey,
    tree: mctx.Tree,
    size: jax.Array,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    *,
    invalid_actions: jax.Array,
    max_num_considered_actions: int = 16,
    gumbel_scale: chex.Numeric = 1.0,
    qtransform: Any = mctx.qtransform_completed_by_mix_value,
    simulations: jax.Array | None = None,
    plan: jax.Array | None = None,
    restart: jax.Array | None = None,
) -> mctx.PolicyOutput:
    """`mctx.gumbel_muzero_policy` (as `azjax.search.policies.gumbel_muzero_policy`: the same PRNG splits) over a
    kept tree whose root starts afresh (the module docstring says why and what is kept).

    Args:
      tree, size: `subtree`'s output (`tree_size("gumbel", num_simulations)` nodes, or any size with `simulations`);
        where size is 0, or above the tree's nodes less the new simulations (no room for them), the search starts
        from `root` ([B]).
      invalid_actions: bool [B, A] at the root.
      simulations, plan: the simulations to run (int32 [B] or scalar, may be traced; default num_simulations) and
        sequential halving's plan for them (`azjax.search.policies.visit_plan`, int32 [M + 1, W]; given with
        `simulations`): one compiled program for every budget.
      restart: bool [B] (default all True): start the kept root afresh. False continues it as it is, with its own
        visits, values and Gumbel noise, by `plan` (an analysis running one sequential halving in pieces: `plan`
        is the whole analysis's, and the root's visits so far are its simulations already run).
    Returns mctx's PolicyOutput: `action` [B] (the best considered root action by gumbel + logits + completed Q),
    `action_weights` [B, A] = softmax(logits + completed Q), and the tree, whose root has num_simulations + 1 visits
    (those it kept too, where it continued).
    """
    num_nodes = tree.node_visits.shape[1]
    sims = jnp.broadcast_to(jnp.asarray(num_simulations if simulations is None else simulations, jnp.int32),
                            size.shape)
    restart = jnp.ones(size.shape, bool) if restart is None else restart
    rng_key, gumbel_rng = jax.random.split(rng_key)
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_rng, shape=root.prior_logits.shape, dtype=root.prior_logits.dtype)
    extra_data = mctx.GumbelMuZeroExtraData(root_gumbel=gumbel)
    fresh = mctx_search.instantiate_tree_from_root(
        root.replace(prior_logits=mask_invalid_actions(root.prior_logits, invalid_actions)), num_nodes - 1,
        root_invalid_actions=invalid_actions, extra_data=extra_data)
    # The kept root as a new one: its stored prior (the network's, masked), 1 visit, the network's value, nothing per
    # child; the children keep their own nodes.
    at_root = (slice(None), mctx.Tree.ROOT_INDEX)
    afresh = tree.replace(
        node_visits=tree.node_visits.at[at_root].set(1),
        node_values=tree.node_values.at[at_root].set(tree.raw_values[at_root]),
        children_prior_logits=tree.children_prior_logits.at[at_root].set(
            mask_invalid_actions(tree.children_prior_logits[at_root], invalid_actions)),
        children_visits=tree.children_visits.at[at_root].set(0),
        children_values=tree.children_values.at[at_root].set(0.0),
        root_invalid_actions=invalid_actions, extra_data=extra_data)
    # Continued in place: the root as it was, with the noise it was searched with.
    kept_gumbel = getattr(tree.extra_data, "root_gumbel", None)
    continued = tree.replace(root_invalid_actions=invalid_actions, extra_data=mctx.GumbelMuZeroExtraData(
        root_gumbel=gumbel if kept_gumbel is None else kept_gumbel))
    tree = _select_kept(restart, continued, afresh)
    kept = (size > 0) & (size + sims <= num_nodes)
    tree = _select_kept(kept, fresh, tree)

    root_select = gumbel_root_selection(num_simulations, max_num_considered_actions, qtransform, plan)
    interior_select = functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform)
    search_tree = continue_search(params, rng_key, tree, first_free=jnp.where(kept, size, 1),
                                  num_simulations=sims, recurrent_fn=recurrent_fn, root_action_selection_fn=root_select,
                                  interior_action_selection_fn=interior_select, max_depth=num_nodes - 1)
    summary = search_tree.summary()
    prior_logits = search_tree.children_prior_logits[at_root]
    gumbel = search_tree.extra_data.root_gumbel  # the continued roots' own
    considered_visit = jnp.max(summary.visit_counts, axis=-1, keepdims=True)
    completed_qvalues = jax.vmap(qtransform, in_axes=[0, None])(search_tree, search_tree.ROOT_INDEX)
    to_argmax = score_considered(considered_visit, gumbel, prior_logits, completed_qvalues, summary.visit_counts)
    action = masked_argmax(to_argmax, invalid_actions)
    action_weights = jax.nn.softmax(mask_invalid_actions(prior_logits + completed_qvalues, invalid_actions))
    return mctx.PolicyOutput(action=action, action_weights=action_weights, search_tree=search_tree)
