"""KataGo's playout-cap randomisation, forced playouts and policy-target pruning (docs/methods.md section 6;
Wu 2019, "Accelerating Self-Play Learning in Go", sections 3.1 and 3.2).

Playout-cap randomisation: per game and per move, with probability p (KataGo: 0.25) the move gets a full
search of N visits and its position becomes a training sample; otherwise a fast search of n < N visits
whose position is not trained on (`draw_full_search` gives both the budget choice and the training mask).
KataGo also switches root noise and other exploration off in fast searches, which only serve to play.

Forced playouts (full searches): every root child c that has had a visit but fewer than

    n_forced(c) = sqrt(k * P(c) * sum_c' N(c'))        (k = 2; P the root prior, noise included)

is selected before anything else (`forced_root_action_selection`, `forced_muzero_policy`).

Policy-target pruning: c* = the most visited root child; every other child c loses up to n_forced(c)
visits, but no more than keeps its PUCT value (computed with the final counts) below PUCT(c*): it keeps the
visits it would have needed to be chosen anyway; children left with <= 1 visit are pruned; the rest is
normalised (`prune_visit_counts`, `pruned_policy_target` on an mctx tree). The PUCT values are mctx's own
(`muzero_action_selection`: pb_c = pb_c_init + log((N + pb_c_base + 1) / pb_c_base), the completed,
normalised Q of its qtransform), so "would have been chosen" means what it meant during the search.

Off values reduce to AlphaZero: p = 1 draws full searches everywhere (all trained on); k = 0 forces and
prunes nothing (`forced_muzero_policy` is `mctx.muzero_policy`, the pruned target is the visit distribution).

In the loop (`PlayoutCapSearch`, the search-policy seam) one coin per move decides for all the games of a
device at once: a batch shares one search budget, so a per-game coin would save no compute. The expected
share of full searches is p as in KataGo; the games of one move are correlated, the moves are not.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx

from azjax import replay as rb
from azjax.games import Game, GameState
from azjax.methods.alphazero import Searched
from azjax.search import Evaluator, ParentAwareEvaluator, SearchSpec, run_search, search_inputs
from azjax.search.contempt import contempt_on
from azjax.search.core import search
from azjax.search.game_search import game_actions
from azjax.search.layout import to_actions
from azjax.search.policies import (
    add_dirichlet_noise,
    apply_temperature,
    logits_from_probs,
    mask_invalid_actions,
    muzero_policy,
)

__all__ = [
    "PlayoutCapSearch",
    "draw_full_search",
    "forced_muzero_policy",
    "forced_playouts",
    "forced_root_action_selection",
    "pad_tree",
    "prune_visit_counts",
    "pruned_policy_target",
    "puct_parts",
]


def draw_full_search(key: jax.Array, shape: tuple[int, ...], full_prob: float | jax.Array) -> jax.Array:
    """bool [shape]: the moves that get a full search (and are trained on); the others get a fast search
    and are not trained on. u < p with u uniform in [0, 1), so p = 1 gives full searches everywhere."""
    return jax.random.uniform(key, shape) < full_prob


def forced_playouts(prior: jax.Array, total: jax.Array, k: float) -> jax.Array:
    """float [..., A]: n_forced(c) = sqrt(k P(c) sum_c' N(c')) for root priors `prior` [..., A] and the
    root's child-visit sum `total` [...]."""
    return jnp.sqrt(k * prior * jnp.asarray(total, prior.dtype)[..., None])


def puct_parts(tree: mctx.Tree, node: jax.Array, *, pb_c_init: float = 1.25, pb_c_base: float = 19652.0,
               qtransform: Any = mctx.qtransform_by_parent_and_siblings) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The pieces of mctx's PUCT score at `node` of an *unbatched* tree, as `muzero_action_selection` forms
    them: (value score [A], exploration factor sqrt(N(s)) pb_c P(s, a) [A], prior P [A]), so that the
    score of a child with n visits is value + factor / (n + 1)."""
    node_visit = tree.node_visits[node]
    pb_c = pb_c_init + jnp.log((node_visit + pb_c_base + 1.0) / pb_c_base)
    prior = jax.nn.softmax(tree.children_prior_logits[node])
    return qtransform(tree, node), jnp.sqrt(node_visit) * pb_c * prior, prior


def forced_root_action_selection(rng_key: chex.PRNGKey, tree: mctx.Tree, node_index: chex.Numeric, *, k: float,
                                 pb_c_init: float = 1.25, pb_c_base: float = 19652.0,
                                 qtransform: Any = mctx.qtransform_by_parent_and_siblings) -> chex.Array:
    """mctx's root selection (`muzero_action_selection` at depth 0) with forced playouts: a root child with
    0 < N(c) < n_forced(c) beats every other child (among several such, the best PUCT score goes first).
    With k = 0 nothing is forced and the choice is mctx's, bit for bit."""
    action = mctx.muzero_action_selection(rng_key, tree, node_index, 0, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                                          qtransform=qtransform)
    if k == 0:
        return action
    visits = tree.children_visits[node_index]
    value, factor, prior = puct_parts(tree, node_index, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                                      qtransform=qtransform)
    forced = (visits > 0) & (visits < forced_playouts(prior, visits.sum(), k)) & (tree.root_invalid_actions == 0)
    score = jnp.where(forced, value + factor / (visits + 1), -jnp.inf)
    return jnp.where(forced.any(), jnp.argmax(score).astype(action.dtype), action)


def forced_muzero_policy(params: Any, rng_key: chex.PRNGKey, root: mctx.RootFnOutput, recurrent_fn: mctx.RecurrentFn,
                         num_simulations: int, invalid_actions: chex.Array | None = None,
                         max_depth: int | None = None, loop_fn: mctx.LoopFn = jax.lax.fori_loop, *, k: float = 2.0,
                         qtransform: Any = mctx.qtransform_by_parent_and_siblings, dirichlet_fraction: float = 0.25,
                         dirichlet_alpha: float = 0.3, pb_c_init: float = 1.25, pb_c_base: float = 19652.0,
                         temperature: float = 1.0) -> mctx.PolicyOutput:
    """`mctx.muzero_policy` with forced playouts at the root (same signature plus `k`; same PRNG use, noise,
    search and action sampling, so k = 0 reproduces it exactly). `action_weights` is the raw visit
    distribution; the training target is `pruned_policy_target(out.search_tree, k, ...)`."""
    if k == 0:
        return muzero_policy(params, rng_key, root, recurrent_fn, num_simulations, invalid_actions, max_depth,
                             loop_fn, qtransform=qtransform, dirichlet_fraction=dirichlet_fraction,
                             dirichlet_alpha=dirichlet_alpha, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                             temperature=temperature)
    # mctx.muzero_policy's own steps (its private helpers, as search.policies mirrors them), root selection swapped.
    rng_key, dirichlet_rng_key, search_rng_key = jax.random.split(rng_key, 3)
    noisy = add_dirichlet_noise(dirichlet_rng_key, jax.nn.softmax(root.prior_logits),
                                 dirichlet_fraction=dirichlet_fraction, dirichlet_alpha=dirichlet_alpha)
    root = root.replace(prior_logits=mask_invalid_actions(logits_from_probs(noisy), invalid_actions))
    interior = functools.partial(mctx.muzero_action_selection, pb_c_base=pb_c_base, pb_c_init=pb_c_init,
                                 qtransform=qtransform)
    root_selection = functools.partial(forced_root_action_selection, k=k, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                                       qtransform=qtransform)
    tree = search(params=params, rng_key=search_rng_key, root=root, recurrent_fn=recurrent_fn,
                  root_action_selection_fn=root_selection, interior_action_selection_fn=interior,
                  num_simulations=num_simulations, max_depth=max_depth, invalid_actions=invalid_actions,
                  loop_fn=loop_fn)
    weights = tree.summary().visit_probs
    action_logits = apply_temperature(logits_from_probs(weights), temperature)
    action = jax.random.categorical(rng_key, action_logits)
    return mctx.PolicyOutput(action=action, action_weights=weights, search_tree=tree)


def prune_visit_counts(visits: jax.Array, value: jax.Array, factor: jax.Array, prior: jax.Array,
                       k: float) -> jax.Array:
    """float [..., A]: KataGo's pruned root visit counts.

    visits [..., A] the final root child visit counts; value [..., A], factor [..., A] mctx's PUCT pieces
    (score of a child with n visits = value + factor / (n + 1)); prior [..., A] the root prior (noised).
    c* (most visited, first on ties) keeps its visits. Another child c loses min(n_forced(c), N(c) - N_want(c))
    visits, where N_want(c) = factor / (PUCT(c*) - value(c)) - 1 solves value + factor / (n + 1) = PUCT(c*):
    with fewer visits than N_want its PUCT would have beaten c*'s, so those were not forced. A child whose
    value alone reaches PUCT(c*) loses nothing. Children left with <= 1 visit are pruned to 0.
    """
    visits = visits.astype(jnp.float32)
    best = jnp.argmax(visits, axis=-1)[..., None]
    is_best = jnp.arange(visits.shape[-1]) == best
    best_score = jnp.take_along_axis(value + factor / (visits + 1.0), best, axis=-1)
    gap = best_score - value
    wanted = jnp.where(gap > 0, factor / jnp.where(gap > 0, gap, 1.0) - 1.0, jnp.inf)
    removable = jnp.clip(visits - wanted, 0.0, forced_playouts(prior, visits.sum(axis=-1), k))
    pruned = visits - removable
    pruned = jnp.where(pruned <= 1.0, 0.0, pruned)
    return jnp.where(is_best, visits, pruned)


def pruned_policy_target(tree: mctx.Tree, k: float = 2.0, *, pb_c_init: float = 1.25, pb_c_base: float = 19652.0,
                         qtransform: Any = mctx.qtransform_by_parent_and_siblings) -> jax.Array:
    """float [B, A]: the policy target of B searches after policy-target pruning (normalised pruned root
    visit counts; a root with no visits gets mctx's uniform `visit_probs`). k = 0 gives the visit
    distribution `tree.summary().visit_probs`, bit for bit."""
    summary = tree.summary()
    if k == 0:
        return summary.visit_probs
    root = jnp.zeros(tree.node_visits.shape[:1], jnp.int32)
    parts = jax.vmap(functools.partial(puct_parts, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                                       qtransform=qtransform))(tree, root)
    pruned = prune_visit_counts(tree.children_visits[:, 0], *parts, k)
    total = pruned.sum(axis=-1, keepdims=True)
    return jnp.where(total > 0, pruned / jnp.maximum(total, 1.0), summary.visit_probs)


def pad_tree(tree: mctx.Tree, num_nodes: int) -> mctx.Tree:
    """`tree` ([B, n] nodes) grown to `num_nodes` >= n nodes that were never reached (no visits, no parent,
    no children), so a fast and a full search have one shape. Searches read the same from it."""
    n = tree.node_visits.shape[1]
    if num_nodes == n:
        return tree
    fill = {"parents": mctx.Tree.NO_PARENT, "action_from_parent": mctx.Tree.NO_PARENT,
            "children_index": mctx.Tree.UNVISITED}

    def pad(name: str, x: jax.Array) -> jax.Array:
        widths = [(0, 0)] * x.ndim
        widths[1] = (0, num_nodes - n)
        return jnp.pad(x, widths, constant_values=fill.get(name, 0))

    node_fields = ("node_visits", "raw_values", "node_values", "parents", "action_from_parent", "children_index",
                   "children_prior_logits", "children_visits", "children_rewards", "children_discounts",
                   "children_values")
    # Per-node extra data (search-contempt's depth, frozen flags and counts [B, n, ...]) grows the same way.
    extra = jax.tree.map(lambda x: pad("extra_data", x) if x.ndim >= 2 and x.shape[1] == n else x, tree.extra_data)
    return tree.replace(**{f: pad(f, getattr(tree, f)) for f in node_fields},
                        embeddings=jax.tree.map(lambda x: pad("embeddings", x), tree.embeddings), extra_data=extra)


@dataclasses.dataclass(frozen=True)
class PlayoutCapSearch:
    """The search-policy seam with KataGo's playout caps (docs/methods.md section 6).

    Per move, with probability `full_prob` every game of the device gets the full search (`spec`; with
    `forced_k` > 0 PUCT with forced playouts and a pruned policy target) and its positions are trained on;
    otherwise the fast search of `fast_simulations`, without root noise, whose positions are recorded
    (`full_search` = 0) but never trained on. full_prob = 1 and forced_k = 0 is `FullSearch`, bit for bit.
    """

    spec: SearchSpec
    game: Game
    evaluate: Evaluator | ParentAwareEvaluator
    full_prob: float
    fast_simulations: int
    forced_k: float = 0.0
    records: tuple[str, ...] = ("full_search",)
    columns: tuple[str, ...] = ("full_search_share",)

    def __post_init__(self) -> None:
        if self.forced_k > 0 and (self.spec.kind != "puct" or contempt_on(self.spec.n_scl)
                                  or self.spec.certainty != "off"):
            raise ValueError("forced playouts need the PUCT search without search-contempt or certainty propagation")

    @property
    def fast_spec(self) -> SearchSpec:
        return dataclasses.replace(self.spec, num_simulations=self.fast_simulations, dirichlet_fraction=0.0,
                                   gumbel_scale=0.0)

    def _full(self, params: Any, key: jax.Array, states: GameState) -> tuple[mctx.PolicyOutput, jax.Array]:
        if self.forced_k == 0:
            out = run_search(self.spec, self.game, self.evaluate, params, key, states)
            return out, out.action_weights
        root, recurrent_fn, invalid = search_inputs(self.game, self.evaluate, params, states, self.spec.twofold_draws)
        s = self.spec
        out = forced_muzero_policy(params, key, root, recurrent_fn, s.num_simulations, invalid, k=self.forced_k,
                                   dirichlet_fraction=s.dirichlet_fraction, dirichlet_alpha=s.dirichlet_alpha,
                                   pb_c_init=s.pb_c_init)
        target = pruned_policy_target(out.search_tree, self.forced_k, pb_c_init=s.pb_c_init)
        out = game_actions(self.game, states, out)  # a game searched over slots: its actions (`search.layout`)
        return out, to_actions(target, getattr(out, "moves", None), self.game.num_actions)

    def _fast(self, params: Any, key: jax.Array, states: GameState) -> tuple[mctx.PolicyOutput, jax.Array]:
        out = run_search(self.fast_spec, self.game, self.evaluate, params, key, states)
        out = out.replace(search_tree=pad_tree(out.search_tree, self.spec.num_simulations + 1))
        return out, out.action_weights

    def search(self, params: Any, key: jax.Array, states: GameState) -> tuple[Searched, dict[str, jax.Array]]:
        b = states.current_player.shape[0]
        if not isinstance(self.full_prob, jax.core.Tracer) and self.full_prob >= 1:  # traced: a sweep's run axis
            out, target = self._full(params, key, states)
            full = jnp.bool_(True)
        else:
            full = draw_full_search(jax.random.fold_in(key, 1), (), self.full_prob)
            out, target = jax.lax.cond(full, self._full, self._fast, params, key, states)
        trained = jnp.broadcast_to(full, (b,))
        return Searched(out, target, trained), {"full_search_moves": trained.sum(dtype=jnp.int32),
                                                "searched_moves": jnp.int32(b)}

    def record(self, searched: Searched) -> dict[str, jax.Array]:
        return {"full_search": searched.trained.astype(jnp.float32)}

    def trainable(self, replay: rb.Replay) -> jax.Array:
        return replay.extras["full_search"] > 0

    def row(self, metrics: dict[str, Any]) -> dict[str, Any]:
        moves = int(metrics["searched_moves"])
        return {"full_search_share": int(metrics["full_search_moves"]) / moves if moves else float("nan")}
