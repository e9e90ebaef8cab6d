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

from azjax.search.core import search

__all__ = [
    "SearchExtension",
    "add_dirichlet_noise",
    "apply_temperature",
    "gumbel_muzero_policy",
    "logits_from_probs",
    "mask_invalid_actions",
    "masked_argmax",
    "muzero_policy",
    "noisy_root_logits",
    "score_considered",
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
            extension: SearchExtension | None, root_gumbel: jax.Array | None = None) -> mctx.Tree:
    """The search of both policies: mctx's (its Gumbel extra data where there is a `root_gumbel`), or with the
    interior selection, the tree's extra data and the loop of an `extension`."""
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
                  extra_data=extra_data, loop_fn=loop_fn)


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
) -> mctx.PolicyOutput:
    """`mctx.muzero_policy` (PUCT, root Dirichlet noise), step for step, on `azjax.search.core.search`.

    Arguments and return value are `mctx.muzero_policy`'s (B = batch, A = actions): `root` with
    prior_logits [B, A], value [B]; `invalid_actions` [B, A] (True = invalid); returns `action` [B]
    sampled from visits^(1/temperature), `action_weights` [B, A] = root visit distribution and
    `search_tree`. `extension` changes the search (`SearchExtension`; None: mctx's).
    """
    rng_key, dirichlet_rng_key, search_rng_key = jax.random.split(rng_key, 3)
    root = root.replace(prior_logits=noisy_root_logits(dirichlet_rng_key, root.prior_logits, invalid_actions,
                                                       dirichlet_fraction=dirichlet_fraction,
                                                       dirichlet_alpha=dirichlet_alpha))

    normal_fn = functools.partial(
        mctx.muzero_action_selection, pb_c_base=pb_c_base, pb_c_init=pb_c_init, qtransform=qtransform
    )
    search_tree = _search(params, search_rng_key, root, recurrent_fn, functools.partial(normal_fn, depth=0),
                          normal_fn, num_simulations, invalid_actions, max_depth, loop_fn, extension)

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
) -> mctx.PolicyOutput:
    """`mctx.gumbel_muzero_policy` (Gumbel root, sequential halving), step for step, on `azjax.search.core.search`.

    Arguments and return value are `mctx.gumbel_muzero_policy`'s: `action` [B] is the best considered
    root action by gumbel + logits + completed Q, `action_weights` [B, A] = softmax(logits +
    completed Q), `search_tree` (its extra data holds `root_gumbel` [B, A]). `extension` as in `muzero_policy`.
    """
    root = root.replace(prior_logits=mask_invalid_actions(root.prior_logits, invalid_actions))

    rng_key, gumbel_rng = jax.random.split(rng_key)
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_rng, shape=root.prior_logits.shape, dtype=root.prior_logits.dtype)

    root_select = functools.partial(mctx.gumbel_muzero_root_action_selection, num_simulations=num_simulations,
                                    max_num_considered_actions=max_num_considered_actions, qtransform=qtransform)
    interior_select = functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform)
    search_tree = _search(params, rng_key, root, recurrent_fn, root_select, interior_select, num_simulations,
                          invalid_actions, max_depth, loop_fn, extension, root_gumbel=gumbel)
    summary = search_tree.summary()

    considered_visit = jnp.max(summary.visit_counts, axis=-1, keepdims=True)
    completed_qvalues = jax.vmap(qtransform, in_axes=[0, None])(search_tree, search_tree.ROOT_INDEX)
    to_argmax = score_considered(considered_visit, gumbel, root.prior_logits, completed_qvalues, summary.visit_counts)
    action = masked_argmax(to_argmax, invalid_actions)

    completed_search_logits = mask_invalid_actions(root.prior_logits + completed_qvalues, invalid_actions)
    action_weights = jax.nn.softmax(completed_search_logits)
    return mctx.PolicyOutput(action=action, action_weights=action_weights, search_tree=search_tree)
