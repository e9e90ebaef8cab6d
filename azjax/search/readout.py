"""The root read-out of a search, on the device: per-move statistics and principal variations.

    stats = search_statistics(spec, game, evaluate, params, key, states)   # states [B] -> dict of [B, ...]

Only these statistics leave the device (`reused_search_statistics` returns the tree as well, for the next search to
continue, but as device arrays). The statistics follow lc0's verbose move stats
(docs/methods.md section 5; `azjax.engines.lc0` formats them), all from the view of the player to move at the root:
N (root child visits), P (prior over legal moves), Q (the child's mean backed-up value; the root's search value
for an unvisited child), U (mctx's PUCT exploration term on the raw [-1, 1] Q scale), V (the child's raw network
value), the searched choice and the principal variations of the most visited children.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import mctx
from mctx._src.search import instantiate_tree_from_root

from azjax.games import Game, GameState
from azjax.search.certainty import CertaintyData, child_bounds
from azjax.search.game_search import (
    Evaluator,
    SearchSpec,
    game_actions,
    gumbel_qtransform,
    root_q_values,
    run_search,
    search_inputs,
    searched_choice,
)
from azjax.search.layout import node_moves, slot_action, slot_of, to_actions
from azjax.search.reuse import (
    empty_like_search,
    reused_gumbel_muzero_policy,
    reused_muzero_policy,
    subtree,
    tree_size,
)

PB_C_BASE = 19652.0  # mctx's muzero_policy default
PV_LENGTH = 16  # maximum principal-variation length read out of a search
TOP_K_PV = 16  # root children (by visits) that get their own PV (lz-analyze)


def _pv_from(game: Game, tree: Any, first: jax.Array, length: int) -> jax.Array:
    """int32 [B, length]: `first` [B] (a game action) then the most-visited child at each level, -1 where it stops.
    The moves are the game's actions; the tree's slots where it is searched over them (`azjax.search.layout`)."""
    batch = jnp.arange(first.shape[0])
    root = jnp.zeros_like(first)
    first_slot = jnp.maximum(slot_of(node_moves(game, tree, root), first), 0)
    node = tree.children_index[batch, 0, first_slot]
    pv = jnp.full((first.shape[0], length), -1, jnp.int32).at[:, 0].set(first)
    alive = tree.children_visits[batch, 0, first_slot] > 0

    def body(i: int, carry: tuple[jax.Array, jax.Array, jax.Array]):
        pv, node, alive = carry
        safe = jnp.maximum(node, 0)
        visits = tree.children_visits[batch, safe]  # [B, W]
        a = jnp.argmax(visits, axis=-1).astype(jnp.int32)
        alive = alive & (node >= 0) & (visits[batch, a] > 0)
        pv = pv.at[:, i].set(jnp.where(alive, slot_action(node_moves(game, tree, safe), a), -1))
        node = jnp.where(alive, tree.children_index[batch, safe, a], -1)
        return pv, node, alive

    pv, _, _ = jax.lax.fori_loop(1, length, body, (pv, node, alive))
    return pv


def search_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator, params: Any, key: jax.Array,
                      states: GameState) -> dict[str, jax.Array]:
    """Runs `run_search` on `states` [B] and returns the root read-out (see the module docstring)."""
    return tree_statistics(spec, game, run_search(spec, game, evaluate, params, key, states), states)


def budgeted_search_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator, params: Any, key: jax.Array,
                               states: GameState, simulations: jax.Array,
                               plan: jax.Array) -> tuple[dict[str, jax.Array], mctx.Tree]:
    """`search_statistics` of a search of `simulations` (int32 scalar, at most spec.num_simulations; a Gumbel root
    follows `plan`, `azjax.search.policies.visit_plan` of it, int32 [M + 1, spec.num_simulations]) in a tree of
    spec.num_simulations + 1 nodes: one compiled program for every budget (the engines' searches that keep no
    tree). Returns (read-out, tree); the tree stays on the device (the engine reads a proven subtree out of it)."""
    out = run_search(spec, game, evaluate, params, key, states, simulations,
                     plan if spec.kind == "gumbel" else None)
    return tree_statistics(spec, game, out, states), out.search_tree


def reused_search_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator, params: Any, key: jax.Array,
                             states: GameState, tree: mctx.Tree, plies: jax.Array, descended: jax.Array,
                             budget: jax.Array, simulations: jax.Array | None = None, plan: jax.Array | None = None,
                             restart: jax.Array | None = None,
                             num_nodes: int | None = None) -> tuple[dict[str, jax.Array], mctx.Tree]:
    """`search_statistics` of a search that continues the subtree of `tree` (an earlier search's, of
    `tree_size(spec.kind, S)` nodes, S = spec.num_simulations) under `plies` (int32 [B, P], -1 = no move; `states`
    [B] are the positions they lead to) (`azjax.search.reuse`).

    PUCT searches to `budget` (int32 [B]) root visits, the kept ones included: at most S + 1 (fewer: a tree kept from
    a longer search, continued in its own size); descended (bool [B]): the root is below the root of the search that
    made it, so its prior gets the root's treatment (`reused_muzero_policy`). Gumbel starts the root afresh and runs
    its S simulations from it, whatever `budget` and `descended` say (`reused_gumbel_muzero_policy`).

    Returns (read-out, the new tree); the read-out also holds `reused_visits` [B], the root child visits the search
    started with (0 where nothing was kept, and under Gumbel where the root starts afresh), and `kept_nodes` [B], the
    nodes it started with (the new tree's nodes [0, kept_nodes); the search evaluated the others).

    The engines' one program for every budget: `num_nodes` (static) gives the tree its own size, whatever
    spec.num_simulations says (PUCT: searched to `budget` within it, up to num_nodes root visits). A Gumbel search
    then runs `simulations` (int32 [B] or scalar, may be traced) by `plan` (`azjax.search.policies.visit_plan`,
    int32 [M + 1, W]); where `restart` (bool [B]) is False it continues the kept root in place instead of starting
    it afresh (an analysis that runs one sequential halving in pieces: `plan` is then the whole analysis's, and the
    root's visits so far are the simulations of it already run)."""
    num_nodes = tree_size(spec.kind, spec.num_simulations) if num_nodes is None else int(num_nodes)
    kept, size = subtree(tree, plies, num_nodes, game)
    root, recurrent_fn, invalid = search_inputs(game, evaluate, params, states, spec.twofold_draws)
    if spec.kind == "gumbel":
        sims = jnp.broadcast_to(jnp.asarray(spec.num_simulations if simulations is None else simulations, jnp.int32),
                                size.shape)
        restart = jnp.ones(size.shape, bool) if restart is None else restart
        out = reused_gumbel_muzero_policy(params, key, kept, size, root, recurrent_fn, spec.num_simulations,
                                          invalid_actions=invalid, gumbel_scale=spec.gumbel_scale,
                                          qtransform=gumbel_qtransform(spec),
                                          max_num_considered_actions=spec.max_num_considered_actions,
                                          simulations=sims, plan=plan, restart=restart)
        size = jnp.where(size + sims <= num_nodes, size, 0)  # kept only with room for the new ones
        reused_visits = jnp.where((size > 0) & ~restart, kept.children_visits[:, mctx.Tree.ROOT_INDEX].sum(-1), 0)
    else:
        out = reused_muzero_policy(params, key, kept, size, root, recurrent_fn, num_nodes - 1,
                                   invalid_actions=invalid, descended=descended, budget=budget,
                                   pb_c_init=spec.pb_c_init, dirichlet_fraction=spec.dirichlet_fraction,
                                   dirichlet_alpha=spec.dirichlet_alpha)
        reused_visits = jnp.where(size > 0, kept.node_visits[:, mctx.Tree.ROOT_INDEX] - 1, 0)
    out = game_actions(game, states, out)
    stats = tree_statistics(spec, game, out, states)
    stats["reused_visits"] = reused_visits
    stats["kept_nodes"] = size
    return stats, out.search_tree


def empty_search_tree(spec: SearchSpec, game: Game, evaluate: Evaluator, params: Any,
                      states: GameState, num_nodes: int | None = None) -> mctx.Tree:
    """A tree of `num_nodes` (default `tree_size(spec.kind, spec.num_simulations)`) nodes for `states` [B] with no
    node visited (and the extra data of its kind): the `tree` of a first `reused_search_statistics`, which then
    searches afresh (one compiled search for the first move and the later ones). Only shapes are traced, nothing is
    computed."""
    num_nodes = tree_size(spec.kind, spec.num_simulations) if num_nodes is None else int(num_nodes)

    def instantiate() -> mctx.Tree:
        root, _, invalid = search_inputs(game, evaluate, params, states)
        extra = mctx.GumbelMuZeroExtraData(root_gumbel=root.prior_logits) if spec.kind == "gumbel" else None
        return instantiate_tree_from_root(root, num_nodes - 1, root_invalid_actions=invalid, extra_data=extra)

    return empty_like_search(jax.eval_shape(instantiate))


def tree_statistics(spec: SearchSpec, game: Game, out: mctx.PolicyOutput, states: GameState) -> dict[str, jax.Array]:
    """The root read-out (see the module docstring) of a finished search `out` of `states` [B], by the game's
    actions (a tree over slots is read through `out.moves`, `azjax.search.layout`)."""
    tree = out.search_tree
    moves = getattr(out, "moves", None)
    num_actions = game.num_actions
    batch = jnp.arange(states.legal_action_mask.shape[0])
    legal = states.legal_action_mask if moves is None else moves >= 0  # [B, W]
    n = tree.children_visits[:, 0]  # [B, W]
    logits = jnp.where(legal, tree.children_prior_logits[:, 0], -jnp.inf)
    p = jax.nn.softmax(logits, axis=-1)
    p = jnp.where(legal, p, 0.0)
    root_value = tree.node_values[:, 0]
    child = tree.children_index[:, 0]  # [B, W]
    expanded = child >= 0
    child_raw = jnp.take_along_axis(tree.raw_values, jnp.maximum(child, 0), axis=1)
    v = tree.children_rewards[:, 0] + tree.children_discounts[:, 0] * child_raw
    q_raw = root_q_values(tree)
    # From here on by the game's actions.
    n, p, v, q_raw = (to_actions(x, moves, num_actions) for x in (n, p, v, q_raw))
    expanded = to_actions(expanded, moves, num_actions, False)
    q = jnp.where(n > 0, q_raw, root_value[:, None])
    n_parent = jnp.sum(n, axis=-1, keepdims=True).astype(jnp.float32)
    c = spec.pb_c_init + jnp.log((n_parent + PB_C_BASE + 1.0) / PB_C_BASE)
    u = c * p * jnp.sqrt(n_parent) / (1.0 + n)
    best = searched_choice(spec, out)
    best_q = jnp.where(n[batch, best] > 0, q_raw[batch, best], root_value)
    k = min(TOP_K_PV, n.shape[-1])
    _, top = jax.lax.top_k(n + 1e-6 * p, k)  # [B, K]
    top = top.astype(jnp.int32)
    top_pv = jax.vmap(lambda first: _pv_from(game, tree, first, PV_LENGTH), in_axes=1, out_axes=1)(top)
    # A root child whose move ended the game, and its reward to the root's mover (a mate in one where it is 1).
    ends = to_actions((child >= 0) & (tree.children_discounts[:, 0] == 0), moves, num_actions, False)
    reward = to_actions(tree.children_rewards[:, 0], moves, num_actions)
    depth, seldepth = tree_depths(tree)
    stats = dict(
        n=n.astype(jnp.int32), p=p, q=q, u=u, v=v, expanded=expanded, best=best, best_q=best_q,
        root_value=root_value, net_value=tree.raw_values[:, 0], pv=_pv_from(game, tree, best, PV_LENGTH),
        top=top, top_pv=top_pv, ends=ends, reward=reward, depth=depth, seldepth=seldepth,
    )  # fmt: skip
    if moves is not None:  # the root's slot -> action map (a proof read out of the tree is by slots)
        stats["slots"] = moves
    if isinstance(tree.extra_data, CertaintyData):  # the proofs at the root: bounds on each move's worth
        bounds = child_bounds(tree, jnp.zeros(n.shape[:1], jnp.int32))
        stats["lower"] = to_actions(bounds.lower, moves, num_actions, -1.0)
        stats["upper"] = to_actions(bounds.upper, moves, num_actions, 1.0)
        stats["ends"] = stats["ends"] | to_actions(bounds.ends_game & bounds.legal, moves, num_actions, False)
        stats["reward"] = jnp.where(stats["ends"] & ~expanded, stats["lower"], reward)
    return stats


def tree_depths(tree: mctx.Tree) -> tuple[jax.Array, jax.Array]:
    """(depth, seldepth), float32 [B] and int32 [B], as lc0 reports them: the mean depth of the tree's nodes below
    the root (each was a simulation's leaf) and the deepest one's. Nodes below a move that ended the game (mctx
    expands past a finished game, every such node worth 0) do not count: the game is as deep as its end."""
    batch = jnp.arange(tree.node_visits.shape[0])[:, None]
    parents = tree.parents
    has_parent = parents >= 0
    parent = jnp.maximum(parents, 0)
    action = jnp.maximum(tree.action_from_parent, 0)
    ended = has_parent & (tree.children_discounts[batch, parent, action] == 0)  # its own move ended the game

    # Parents have smaller indices than their children; each pass settles one more level, until nothing changes.
    def body(carry: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
        depth, past, _ = carry
        new_depth = jnp.where(has_parent, depth[batch, parent] + 1, 0)
        new_past = has_parent & (past[batch, parent] | ended[batch, parent])
        return new_depth, new_past, jnp.any(new_depth != depth) | jnp.any(new_past != past)

    zeros = jnp.zeros_like(parents)
    depth, past, _ = jax.lax.while_loop(lambda c: c[2], body, (zeros, zeros.astype(bool), jnp.array(True)))
    counted = has_parent & (tree.node_visits > 0) & ~past
    total = jnp.sum(jnp.where(counted, depth, 0), axis=1)
    count = jnp.sum(counted, axis=1)
    mean = total.astype(jnp.float32) / jnp.maximum(count, 1).astype(jnp.float32)
    return mean, jnp.max(jnp.where(counted, depth, 0), axis=1).astype(jnp.int32)
