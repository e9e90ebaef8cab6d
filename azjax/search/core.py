"""mctx's batched search loop with a backup whose cost does not grow with the tree.

`search` takes the arguments of `mctx.search` and returns the same tree, bit for bit (the tests compare
every field). It differs in one step. mctx backs a simulation up with `jax.vmap` over a `while_loop` that
carries the whole tree: under vmap every iteration of that loop selects, per game, between the updated
and the old tree, so each step up the path touches all B x (num_simulations + 1) x A entries and a search
costs O(num_simulations^2). Here the backup is one `while_loop` over the batch that carries only the
[B] path indices and values and writes each step with a [B]-sized scatter; it runs until every game's
path has reached its root (games whose path is shorter write nowhere: their writes are dropped). A
search then costs O(num_simulations x depth), which is what lets a CPU search thousands of visits.

Selection, expansion and the tree's layout are mctx's own (`mctx._src.search`, pinned by the
`mctx==0.0.71` requirement); only `backward` is replaced.
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx
from mctx._src import action_selection as mctx_action_selection
from mctx._src import search as mctx_search

__all__ = ["backward", "search"]


def backward(tree: mctx.Tree, leaf_index: jax.Array) -> mctx.Tree:
    """Backs the value of each game's node `leaf_index` ([B]) up its path to the root: mctx's `backward`
    for a batched tree, without vmapping its loop.

    At each step up, for every game whose path has not reached the root yet: the discounted return
    reward + discount * G from the child, the parent's running mean of returns, its visit count, and the
    child's value and visit count as seen from the parent. Path nodes are distinct, so per game the reads
    and writes happen in mctx's order and give its results exactly.
    """
    batch = jnp.arange(leaf_index.shape[0])
    leaf_index = leaf_index.astype(jnp.int32)

    def cond(state: tuple[mctx.Tree, jax.Array, jax.Array]) -> jax.Array:
        _, _, index = state
        return jnp.any(index != mctx.Tree.ROOT_INDEX)

    def body(state: tuple[mctx.Tree, jax.Array, jax.Array]) -> tuple[mctx.Tree, jax.Array, jax.Array]:
        tree, leaf_value, index = state
        climbing = index != mctx.Tree.ROOT_INDEX  # [B]
        parent = jnp.where(climbing, tree.parents[batch, index], index)
        action = jnp.maximum(tree.action_from_parent[batch, index], 0)
        count = tree.node_visits[batch, parent]
        reward = tree.children_rewards[batch, parent, action]
        climbed_value = reward + tree.children_discounts[batch, parent, action] * leaf_value
        # One read of node_values for both nodes: the write below then depends on every read of it.
        parent_mean, child_value = jnp.moveaxis(tree.node_values[batch[:, None], jnp.stack([parent, index], 1)], 1, 0)
        parent_value = (parent_mean * count + climbed_value) / (count + 1.0)
        child_visits = tree.children_visits[batch, parent, action] + 1
        # Games already at their root write nowhere (an out-of-range index, dropped): a write needs no
        # read of the entry it replaces, so XLA updates the tree in place.
        parent_or_out = jnp.where(climbing, parent, tree.node_values.shape[1])

        def write(x: jax.Array, new: jax.Array, *at: jax.Array) -> jax.Array:
            return x.at[(batch, parent_or_out, *at)].set(new, mode="drop")

        tree = tree.replace(
            node_values=write(tree.node_values, parent_value),
            node_visits=write(tree.node_visits, count + 1),
            children_values=write(tree.children_values, child_value, action),
            children_visits=write(tree.children_visits, child_visits, action),
        )
        return tree, jnp.where(climbing, climbed_value, leaf_value), parent

    tree, _, _ = jax.lax.while_loop(cond, body, (tree, tree.node_values[batch, leaf_index], leaf_index))
    return tree


def search(
    params: Any,
    rng_key: chex.PRNGKey,
    *,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    root_action_selection_fn: mctx.RootActionSelectionFn,
    interior_action_selection_fn: mctx.InteriorActionSelectionFn,
    num_simulations: int,
    max_depth: int | None = None,
    invalid_actions: jax.Array | None = None,
    extra_data: Any = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
    simulations: jax.Array | None = None,
) -> mctx.Tree:
    """`mctx.search`: the same arguments, PRNG use and tree ([B] games, num_simulations + 1 nodes), with
    `backward` above as the backup.

    `simulations` (an int32 scalar, may be traced; at most num_simulations): the loop runs that many simulations in
    the tree of num_simulations + 1 nodes, so one compiled program serves every budget up to num_simulations (the
    engines' time management picks the budget per move). Simulation k expands node k + 1 whatever the tree's size,
    so the nodes [0, simulations + 1) are those of a search of `simulations`, step for step, and the rest stay
    unvisited."""
    action_selection_fn = mctx_action_selection.switching_action_selection_wrapper(
        root_action_selection_fn=root_action_selection_fn,
        interior_action_selection_fn=interior_action_selection_fn,
    )
    batch_size = root.value.shape[0]
    batch_range = jnp.arange(batch_size)
    if max_depth is None:
        max_depth = num_simulations
    if invalid_actions is None:
        invalid_actions = jnp.zeros_like(root.prior_logits)

    def body_fun(sim: jax.Array, loop_state: tuple[jax.Array, mctx.Tree]) -> tuple[jax.Array, mctx.Tree]:
        rng_key, tree = loop_state
        rng_key, simulate_key, expand_key = jax.random.split(rng_key, 3)
        simulate_keys = jax.random.split(simulate_key, batch_size)
        parent_index, action = mctx_search.simulate(simulate_keys, tree, action_selection_fn, max_depth)
        # The node first expanded by simulation `sim` gets index sim + 1 (the root is 0).
        next_node_index = tree.children_index[batch_range, parent_index, action]
        next_node_index = jnp.where(next_node_index == mctx.Tree.UNVISITED, sim + 1, next_node_index)
        tree = mctx_search.expand(params, expand_key, tree, recurrent_fn, parent_index, action, next_node_index)
        tree = backward(tree, next_node_index)
        return rng_key, tree

    tree = mctx_search.instantiate_tree_from_root(
        root, num_simulations, root_invalid_actions=invalid_actions, extra_data=extra_data
    )
    _, tree = loop_fn(0, num_simulations if simulations is None else simulations, body_fun, (rng_key, tree))
    return tree
