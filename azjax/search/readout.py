"""The root read-out of a search, on the device: per-move statistics and principal variations.

    stats = search_statistics(spec, game, evaluate, params, key, states)   # states [B] -> dict of [B, ...]

Only these statistics (not the tree) leave the device. The statistics follow lc0's verbose move stats
(docs/methods.md section 5; `azjax.engines.lc0` formats them), all from the view of the player to move at the root:
N (root child visits), P (prior over legal moves), Q (the child's mean backed-up value; the root's search value
for an unvisited child), U (mctx's PUCT exploration term on the raw [-1, 1] Q scale), V (the child's raw network
value), the searched choice and the principal variations of the most visited children.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from azjax.games import Game, GameState
from azjax.search.game_search import Evaluator, SearchSpec, root_q_values, run_search, searched_choice

PB_C_BASE = 19652.0  # mctx's muzero_policy default
PV_LENGTH = 16  # maximum principal-variation length read out of a search
TOP_K_PV = 16  # root children (by visits) that get their own PV (lz-analyze)


def _pv_from(tree: Any, first: jax.Array, length: int) -> jax.Array:
    """int32 [B, length]: `first` [B] then the most-visited child at each level, -1 where it stops."""
    batch = jnp.arange(first.shape[0])
    node = tree.children_index[batch, 0, first]
    pv = jnp.full((first.shape[0], length), -1, jnp.int32).at[:, 0].set(first)
    alive = tree.children_visits[batch, 0, first] > 0

    def body(i: int, carry: tuple[jax.Array, jax.Array, jax.Array]):
        pv, node, alive = carry
        safe = jnp.maximum(node, 0)
        visits = tree.children_visits[batch, safe]  # [B, A]
        a = jnp.argmax(visits, axis=-1).astype(jnp.int32)
        alive = alive & (node >= 0) & (visits[batch, a] > 0)
        pv = pv.at[:, i].set(jnp.where(alive, a, -1))
        node = jnp.where(alive, tree.children_index[batch, safe, a], -1)
        return pv, node, alive

    pv, _, _ = jax.lax.fori_loop(1, length, body, (pv, node, alive))
    return pv


def search_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator, params: Any, key: jax.Array,
                      states: GameState) -> dict[str, jax.Array]:
    """Runs `run_search` on `states` [B] and returns the root read-out (see the module docstring)."""
    out = run_search(spec, game, evaluate, params, key, states)
    tree = out.search_tree
    batch = jnp.arange(states.legal_action_mask.shape[0])
    legal = states.legal_action_mask
    n = tree.children_visits[:, 0]  # [B, A]
    logits = jnp.where(legal, tree.children_prior_logits[:, 0], -jnp.inf)
    p = jax.nn.softmax(logits, axis=-1)
    p = jnp.where(legal, p, 0.0)
    root_value = tree.node_values[:, 0]
    q_raw = root_q_values(tree)
    q = jnp.where(n > 0, q_raw, root_value[:, None])
    n_parent = jnp.sum(n, axis=-1, keepdims=True).astype(jnp.float32)
    c = spec.pb_c_init + jnp.log((n_parent + PB_C_BASE + 1.0) / PB_C_BASE)
    u = c * p * jnp.sqrt(n_parent) / (1.0 + n)
    child = tree.children_index[:, 0]  # [B, A]
    expanded = child >= 0
    child_raw = jnp.take_along_axis(tree.raw_values, jnp.maximum(child, 0), axis=1)
    v = tree.children_rewards[:, 0] + tree.children_discounts[:, 0] * child_raw
    best = searched_choice(spec, out)
    best_q = jnp.where(n[batch, best] > 0, q_raw[batch, best], root_value)
    k = min(TOP_K_PV, n.shape[-1])
    _, top = jax.lax.top_k(n + 1e-6 * p, k)  # [B, K]
    top = top.astype(jnp.int32)
    top_pv = jax.vmap(lambda first: _pv_from(tree, first, PV_LENGTH), in_axes=1, out_axes=1)(top)
    return dict(
        n=n.astype(jnp.int32), p=p, q=q, u=u, v=v, expanded=expanded, best=best, best_q=best_q,
        root_value=root_value, net_value=tree.raw_values[:, 0], pv=_pv_from(tree, best, PV_LENGTH),
        top=top, top_pv=top_pv,
    )  # fmt: skip
