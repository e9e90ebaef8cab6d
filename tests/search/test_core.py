"""azjax.search.core: mctx's search loop with a backup that carries only the path, not the tree.

Every field of the tree must equal `mctx.search`'s, bit for bit, for PUCT and Gumbel selection, with
and without a `max_depth` cut-off (where a leaf is expanded again), from roots that end in a few moves.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax.games import make_game
from azjax.search import make_recurrent_fn, root_fn
from azjax.search.core import search

GAME = make_game("connect_four")
A = GAME.num_actions
# Roots: the empty board, a middle game, and a position where the side to move wins at once (column 0).
OPENINGS = ([], [3, 3, 2, 4, 4, 2], [0, 1, 0, 1, 0, 1])


def _linear_evaluator(params: jax.Array, states) -> tuple[jax.Array, jax.Array]:
    x = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32)
    y = x @ params
    return y[:, :A], jnp.tanh(y[:, A])


PARAMS = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (int(np.prod(GAME.observation_shape)), A + 1))


def _roots():
    states = jax.vmap(GAME.init)(jax.random.split(jax.random.PRNGKey(0), len(OPENINGS)))
    for i, moves in enumerate(OPENINGS):
        for m in moves:
            one = GAME.step(jax.tree.map(lambda x, i=i: x[i], states), jnp.int32(m))
            states = jax.tree.map(lambda xs, x, i=i: xs.at[i].set(x), states, one)
    return states


def _selection(kind: str, num_simulations: int):
    if kind == "puct":
        interior = functools.partial(mctx.muzero_action_selection, pb_c_init=1.25, pb_c_base=19652.0,
                                     qtransform=mctx.qtransform_by_parent_and_siblings)
        return functools.partial(interior, depth=0), interior, None
    gumbel = jax.random.gumbel(jax.random.PRNGKey(7), (len(OPENINGS), A))
    root = functools.partial(mctx.gumbel_muzero_root_action_selection, num_simulations=num_simulations,
                             max_num_considered_actions=4, qtransform=mctx.qtransform_completed_by_mix_value)
    interior = functools.partial(mctx.gumbel_muzero_interior_action_selection,
                                 qtransform=mctx.qtransform_completed_by_mix_value)
    return root, interior, mctx.GumbelMuZeroExtraData(root_gumbel=gumbel)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["puct", "gumbel"])
@pytest.mark.parametrize("num_simulations,max_depth", [(48, None), (48, 3)])
def test_the_search_builds_mctx_s_tree_bit_for_bit(kind, num_simulations, max_depth):
    states = _roots()
    root = root_fn(GAME, _linear_evaluator, PARAMS, states)
    root_select, interior_select, extra_data = _selection(kind, num_simulations)
    kwargs = dict(root=root, recurrent_fn=make_recurrent_fn(GAME, _linear_evaluator),
                  root_action_selection_fn=root_select, interior_action_selection_fn=interior_select,
                  num_simulations=num_simulations, max_depth=max_depth, invalid_actions=~states.legal_action_mask,
                  extra_data=extra_data)
    key = jax.random.PRNGKey(3)
    ours = jax.jit(lambda k: search(PARAMS, k, **kwargs))(key)
    theirs = jax.jit(lambda k: mctx.search(PARAMS, k, **kwargs))(key)
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=jax.tree_util.keystr(path))
    # The trees are not trivial: every root was searched, and the winning root found its win.
    visits = np.asarray(ours.summary().visit_counts)
    assert (visits.sum(-1) == num_simulations).all()
    assert visits[2].argmax() == 0
