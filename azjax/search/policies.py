"""AlphaZero's search policies: `mctx.muzero_policy` (PUCT with root Dirichlet noise) and
`mctx.gumbel_muzero_policy` (the Gumbel root with sequential halving), step for step, run on
`azjax.search.core.search` (mctx's loop with a backup that does not touch the whole tree per step).

They give mctx's policy outputs exactly: the same PRNG splits, noise, tree, action and action_weights. A search
variant changes the search through a `SearchExtension` (search-contempt: `azjax.search.contempt`); without one
the policies are mctx's. mctx's private helpers they need are copied here, faithfully.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np
from mctx._src import seq_halving

from azjax.search.core import search

__all__ = [
    "SearchExtension",
    "add_dirichlet_noise",
    "apply_temperature",
    "gumbel_muzero_policy",
    "gumbel_root_selection",
    "logits_from_probs",
    "mask_invalid_actions",
    "masked_argmax",
    "muzero_policy",
    "noisy_root_logits",
    "planned_gumbel_root_action_selection",
    "score_considered",
    "visit_plan",
    "visit_policy_output",
]


# ---------------------------------------------------------------- mctx's private helpers (faithful copies)


def mask_invalid_actions(logits: jax.Array, invalid_actions: jax.Array | None) -> jax.Array:
    """mctx `policies.mask_invalid_actions`: invalid actions get the lowest finite logit."""
    if invalid_actions is None:
        return logits
    chex.assert_equal_shape([logits, invalid_actions])
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    min_logit = jnp.finfo(logits.dtype).min
    return jnp.where(invalid_actions, min_logit, logits)


def logits_from_probs(probs: jax.Array) -> jax.Array:
    """mctx `policies.logits_from_probs`."""
    tiny = jnp.finfo(probs.dtype).tiny
    return jnp.log(jnp.maximum(probs, tiny))


def add_dirichlet_noise(
    rng_key: chex.PRNGKey, probs: jax.Array, *, dirichlet_alpha: chex.Numeric, dirichlet_fraction: chex.Numeric
) -> jax.Array:
    """mctx `policies.add_dirichlet_noise`: P' = (1 - eps) P + eps Dir(alpha), per row of probs [B, A]."""
    chex.assert_rank(probs, 2)
    chex.assert_type([dirichlet_alpha, dirichlet_fraction], float)
    batch_size, num_actions = probs.shape
    noise = jax.random.dirichlet(
        rng_key, alpha=jnp.full([num_actions], fill_value=dirichlet_alpha), shape=(batch_size,)
    )
    return (1 - dirichlet_fraction) * probs + dirichlet_fraction * noise


def apply_temperature(logits: jax.Array, temperature: chex.Numeric) -> jax.Array:
    """mctx `policies.apply_temperature`: logits / temperature, temperature 0 allowed."""
    logits = logits - jnp.max(logits, keepdims=True, axis=-1)
    tiny = jnp.finfo(logits.dtype).tiny
    return logits / jnp.maximum(tiny, temperature)


def noisy_root_logits(
    rng_key: chex.PRNGKey, prior_logits: jax.Array, invalid_actions: jax.Array | None, *,
    dirichlet_fraction: chex.Numeric, dirichlet_alpha: chex.Numeric,
) -> jax.Array:
    """mctx `muzero_policy`'s root prior: Dirichlet noise mixed into softmax(prior_logits) [B, A], back to logits,
    invalid actions masked."""
    probs = add_dirichlet_noise(rng_key, jax.nn.softmax(prior_logits), dirichlet_fraction=dirichlet_fraction,
                                dirichlet_alpha=dirichlet_alpha)
    return mask_invalid_actions(logits_from_probs(probs), invalid_actions)


def visit_policy_output(rng_key: chex.PRNGKey, search_tree: mctx.Tree, temperature: chex.Numeric) -> mctx.PolicyOutput:
    """mctx `muzero_policy`'s output: action_weights [B, A] = the root's visit distribution, action [B] sampled
    from visits^(1/temperature)."""
    action_weights = search_tree.summary().visit_probs
    action_logits = apply_temperature(logits_from_probs(action_weights), temperature)
    action = jax.random.categorical(rng_key, action_logits)
    return mctx.PolicyOutput(action=action, action_weights=action_weights, search_tree=search_tree)


def score_considered(
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


def masked_argmax(to_argmax: jax.Array, invalid_actions: jax.Array | None) -> jax.Array:
    """mctx `action_selection.masked_argmax`."""
    if invalid_actions is not None:
        chex.assert_equal_shape([to_argmax, invalid_actions])
        to_argmax = jnp.where(invalid_actions, -jnp.inf, to_argmax)
    return jnp.argmax(to_argmax, axis=-1).astype(jnp.int32)


# ---------------------------------------------------------------- a Gumbel root whose budget is an input


@functools.lru_cache(maxsize=256)
def _plan_rows(max_num_considered_actions: int, num_simulations: int) -> tuple[tuple[int, ...], ...]:
    return seq_halving.get_table_of_considered_visits(max_num_considered_actions, num_simulations)


def visit_plan(max_num_considered_actions: int, num_simulations: int, width: int | None = None) -> np.ndarray:
    """int32 [max_num_considered_actions + 1, width]: sequential halving's visit plan for a search of
    `num_simulations` (mctx's `get_table_of_considered_visits`: row m is the considered visit count of each
    simulation when m actions are considered), padded with zeros to `width` (default num_simulations) columns.

    A search that takes its plan as an input (`planned_gumbel_root_action_selection`) runs any number of
    simulations up to `width` in one compiled program: the budget is data, not a static shape."""
    width = num_simulations if width is None else int(width)
    if not 0 <= num_simulations <= width:
        raise ValueError(f"a plan of {num_simulations} simulations does not fit {width} columns")
    plan = np.zeros((max_num_considered_actions + 1, max(width, 1)), np.int32)
    for m, row in enumerate(_plan_rows(max_num_considered_actions, num_simulations)):
        plan[m, : len(row)] = row
    return plan


def planned_gumbel_root_action_selection(
    rng_key: chex.PRNGKey,
    tree: mctx.Tree,
    node_index: chex.Numeric,
    *,
    plan: jax.Array,
    max_num_considered_actions: int,
    qtransform: Any = mctx.qtransform_completed_by_mix_value,
) -> chex.Array:
    """`mctx.gumbel_muzero_root_action_selection` with sequential halving's table given (`plan`, int32 [M + 1, W],
    `visit_plan`; it may be traced) instead of built from a static `num_simulations`: the same action for the same
    tree wherever `plan` is mctx's table. `tree` is unbatched, as mctx's action selection sees it."""
    del rng_key
    chex.assert_shape([node_index], ())
    visit_counts = tree.children_visits[node_index]
    prior_logits = tree.children_prior_logits[node_index]
    chex.assert_equal_shape([visit_counts, prior_logits])
    completed_qvalues = qtransform(tree, node_index)
    num_valid_actions = jnp.sum(1 - tree.root_invalid_actions, axis=-1).astype(jnp.int32)
    num_considered = jnp.minimum(max_num_considered_actions, num_valid_actions)
    # At the root, the simulation index is the sum of the visit counts (as in mctx).
    simulation_index = jnp.sum(visit_counts, -1)
    considered_visit = plan[num_considered, simulation_index]
    to_argmax = score_considered(considered_visit, tree.extra_data.root_gumbel, prior_logits, completed_qvalues,
                                 visit_counts)
    return masked_argmax(to_argmax, tree.root_invalid_actions)


def gumbel_root_selection(num_simulations: int, max_num_considered_actions: int, qtransform: Any,
                          plan: jax.Array | None = None) -> mctx.RootActionSelectionFn:
    """The Gumbel root's selection rule: mctx's, its sequential-halving table built for `num_simulations`, or with
    the table `plan` given (`planned_gumbel_root_action_selection`)."""
    if plan is None:
        return functools.partial(mctx.gumbel_muzero_root_action_selection, num_simulations=num_simulations,
                                 max_num_considered_actions=max_num_considered_actions, qtransform=qtransform)
    return functools.partial(planned_gumbel_root_action_selection, plan=plan,
                             max_num_considered_actions=max_num_considered_actions, qtransform=qtransform)


# ---------------------------------------------------------------- policies


class SearchExtension(Protocol):
    """What a search variant changes in the policies' search (search-contempt: `azjax.search.contempt.Contempt`):
    the interior selection rule, the tree's extra data (which mctx's Gumbel root selection reads `root_gumbel`
    from) and the loop over simulations. The root, the PRNG use and everything else stay the policy's."""

    def interior_selection(self, normal_fn: mctx.InteriorActionSelectionFn) -> mctx.InteriorActionSelectionFn: ...

    def extra_data(self, batch_size: int, num_simulations: int, num_actions: int,
                   root_gumbel: jax.Array | None) -> Any: ...

    def loop_fn(self, loop_fn: mctx.LoopFn) -> mctx.LoopFn: ...


def _search(params: Any, rng_key: chex.PRNGKey, root: mctx.RootFnOutput, recurrent_fn: mctx.RecurrentFn,
            root_select: Any, interior_select: mctx.InteriorActionSelectionFn, num_simulations: int,
            invalid_actions: jax.Array | None, max_depth: int | None, loop_fn: mctx.LoopFn,
            extension: SearchExtension | None, root_gumbel: jax.Array | None = None,
            simulations: jax.Array | None = None) -> mctx.Tree:
    """The search of both policies: mctx's (its Gumbel extra data where there is a `root_gumbel`), or with the
    interior selection, the tree's extra data and the loop of an `extension`; `simulations` as in
    `azjax.search.core.search`."""
    if extension is None:
        extra_data = None if root_gumbel is None else mctx.GumbelMuZeroExtraData(root_gumbel=root_gumbel)
    else:
        batch_size, num_actions = root.prior_logits.shape
        interior_select = extension.interior_selection(interior_select)
        extra_data = extension.extra_data(batch_size, num_simulations, num_actions, root_gumbel)
        loop_fn = extension.loop_fn(loop_fn)
    return search(params=params, rng_key=rng_key, root=root, recurrent_fn=recurrent_fn,
                  root_action_selection_fn=root_select, interior_action_selection_fn=interior_select,
                  num_simulations=num_simulations, max_depth=max_depth, invalid_actions=invalid_actions,
                  extra_data=extra_data, loop_fn=loop_fn, simulations=simulations)


def muzero_policy(
    params: Any,
    rng_key: chex.PRNGKey,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    invalid_actions: jax.Array | None = None,
    max_depth: int | None = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
    *,
    extension: SearchExtension | None = None,
    qtransform: Any = mctx.qtransform_by_parent_and_siblings,
    dirichlet_fraction: chex.Numeric = 0.25,
    dirichlet_alpha: chex.Numeric = 0.3,
    pb_c_init: chex.Numeric = 1.25,
    pb_c_base: chex.Numeric = 19652,
    temperature: chex.Numeric = 1.0,
    simulations: jax.Array | None = None,
) -> mctx.PolicyOutput:
    """`mctx.muzero_policy` (PUCT, root Dirichlet noise), step for step, on `azjax.search.core.search`.

    Arguments and return value are `mctx.muzero_policy`'s (B = batch, A = actions): `root` with
    prior_logits [B, A], value [B]; `invalid_actions` [B, A] (True = invalid); returns `action` [B]
    sampled from visits^(1/temperature), `action_weights` [B, A] = root visit distribution and
    `search_tree`. `extension` changes the search (`SearchExtension`; None: mctx's). `simulations` (an int32
    scalar, may be traced): run that many simulations (at most num_simulations) in a tree of num_simulations + 1
    nodes, which is then the search of `simulations` (`azjax.search.core.search`).
    """
    rng_key, dirichlet_rng_key, search_rng_key = jax.random.split(rng_key, 3)
    root = root.replace(prior_logits=noisy_root_logits(dirichlet_rng_key, root.prior_logits, invalid_actions,
                                                       dirichlet_fraction=dirichlet_fraction,
                                                       dirichlet_alpha=dirichlet_alpha))

    normal_fn = functools.partial(
        mctx.muzero_action_selection, pb_c_base=pb_c_base, pb_c_init=pb_c_init, qtransform=qtransform
    )
    search_tree = _search(params, search_rng_key, root, recurrent_fn, functools.partial(normal_fn, depth=0),
                          normal_fn, num_simulations, invalid_actions, max_depth, loop_fn, extension,
                          simulations=simulations)

    return visit_policy_output(rng_key, search_tree, temperature)


def gumbel_muzero_policy(
    params: Any,
    rng_key: chex.PRNGKey,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    num_simulations: int,
    invalid_actions: jax.Array | None = None,
    max_depth: int | None = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
    *,
    extension: SearchExtension | None = None,
    qtransform: Any = mctx.qtransform_completed_by_mix_value,
    max_num_considered_actions: int = 16,
    gumbel_scale: chex.Numeric = 1.0,
    simulations: jax.Array | None = None,
    plan: jax.Array | None = None,
) -> mctx.PolicyOutput:
    """`mctx.gumbel_muzero_policy` (Gumbel root, sequential halving), step for step, on `azjax.search.core.search`.

    Arguments and return value are `mctx.gumbel_muzero_policy`'s: `action` [B] is the best considered
    root action by gumbel + logits + completed Q, `action_weights` [B, A] = softmax(logits +
    completed Q), `search_tree` (its extra data holds `root_gumbel` [B, A]). `extension` as in `muzero_policy`.
    `simulations` and `plan` (given together, both may be traced): run `simulations` (an int32 scalar, at most
    num_simulations) in a tree of num_simulations + 1 nodes, the root following `plan` (`visit_plan` of
    `simulations`): the search of `simulations`, from a program compiled once for every budget up to
    num_simulations.
    """
    root = root.replace(prior_logits=mask_invalid_actions(root.prior_logits, invalid_actions))

    rng_key, gumbel_rng = jax.random.split(rng_key)
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_rng, shape=root.prior_logits.shape, dtype=root.prior_logits.dtype)

    root_select = gumbel_root_selection(num_simulations, max_num_considered_actions, qtransform, plan)
    interior_select = functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform)
    search_tree = _search(params, rng_key, root, recurrent_fn, root_select, interior_select, num_simulations,
                          invalid_actions, max_depth, loop_fn, extension, root_gumbel=gumbel, simulations=simulations)
    summary = search_tree.summary()

    considered_visit = jnp.max(summary.visit_counts, axis=-1, keepdims=True)
    completed_qvalues = jax.vmap(qtransform, in_axes=[0, None])(search_tree, search_tree.ROOT_INDEX)
    to_argmax = score_considered(considered_visit, gumbel, root.prior_logits, completed_qvalues, summary.visit_counts)
    action = masked_argmax(to_argmax, invalid_actions)

    completed_search_logits = mask_invalid_actions(root.prior_logits + completed_qvalues, invalid_actions)
    action_weights = jax.nn.softmax(completed_search_logits)
    return mctx.PolicyOutput(action=action, action_weights=action_weights, search_tree=search_tree)
