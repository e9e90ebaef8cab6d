"""azjax.search.reuse: the subtree under the moves played, and a PUCT search that continues it.

Connect Four with a fixed random linear evaluator (so trees are uneven), three roots per batch; one compiled search
and one compiled re-rooting serve every test. The searches compile as training compiles them, since one test
holds them to plain mctx bit for bit.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from production_xla import production_jit
from search_trees import assert_valid_tree

from azjax.games import make_game
from azjax.methods.playout_cap import pad_tree
from azjax.search import search_inputs
from azjax.search.contempt import contempt_gumbel_muzero_policy, contempt_muzero_policy
from azjax.search.reuse import (
    empty_like_search,
    reused_gumbel_muzero_policy,
    reused_muzero_policy,
    subtree,
    tree_size,
)

GAME = make_game("connect_four")
A = GAME.num_actions
S = 48  # simulations per search
NOISE = dict(dirichlet_fraction=0.25, dirichlet_alpha=0.3)  # self-play's root noise: reuse must re-noise


def _linear_evaluator(params: jax.Array, states) -> tuple[jax.Array, jax.Array]:
    x = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32)
    y = x @ params
    return y[:, :A], jnp.tanh(y[:, A])


PARAMS = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (int(np.prod(GAME.observation_shape)), A + 1))


def _roots():
    states = jax.vmap(GAME.init)(jax.random.split(jax.random.PRNGKey(0), 3))
    for i, moves in enumerate([[], [3, 3, 2], [0, 6, 1, 5]]):
        for m in moves:
            one = GAME.step(jax.tree.map(lambda x, i=i: x[i], states), jnp.int32(m))
            states = jax.tree.map(lambda xs, x, i=i: xs.at[i].set(x), states, one)
    return states


@production_jit
def _plain(key, states):
    root, recurrent_fn, invalid = search_inputs(GAME, _linear_evaluator, PARAMS, states)
    return contempt_muzero_policy(PARAMS, key, root, recurrent_fn, S, invalid, n_scl=0, **NOISE)


@production_jit
def _reused(key, states, tree, size, descended):
    root, recurrent_fn, invalid = search_inputs(GAME, _linear_evaluator, PARAMS, states)
    return reused_muzero_policy(PARAMS, key, tree, size, root, recurrent_fn, S, invalid_actions=invalid,
                                descended=descended, **NOISE)


GUMBEL = dict(max_num_considered_actions=4, gumbel_scale=1.0)


@production_jit
def _plain_gumbel(key, states):
    root, recurrent_fn, invalid = search_inputs(GAME, _linear_evaluator, PARAMS, states)
    return contempt_gumbel_muzero_policy(PARAMS, key, root, recurrent_fn, S, invalid, n_scl=0, **GUMBEL)


@production_jit
def _reused_gumbel(key, states, tree, size):
    root, recurrent_fn, invalid = search_inputs(GAME, _linear_evaluator, PARAMS, states)
    return reused_gumbel_muzero_policy(PARAMS, key, tree, size, root, recurrent_fn, S, invalid_actions=invalid,
                                       **GUMBEL)


_subtree = jax.jit(subtree, static_argnums=2)


@functools.cache
def _first_search():
    states = _roots()
    return states, _plain(jax.random.PRNGKey(3), states)


def _played(tree: mctx.Tree, plies: int) -> np.ndarray:
    """[B, 2]: the most visited path of `plies` moves from the root, -1 padded."""
    t = jax.device_get(tree)
    out = np.full((t.node_visits.shape[0], 2), -1, np.int32)
    for b in range(out.shape[0]):
        node = 0
        for p in range(plies):
            out[b, p] = int(np.argmax(t.children_visits[b, node]))
            node = int(t.children_index[b, node, out[b, p]])
    return out


def _states_after(states, moves: np.ndarray):
    for p in range(moves.shape[1]):
        if (moves[:, p] >= 0).all():
            states = jax.vmap(GAME.step)(states, jnp.asarray(moves[:, p]))
    return states


def _descendants(parents: np.ndarray, root: int) -> list[int]:
    """The nodes under `root` (itself first), in index order: the reference re-indexing."""
    inside = {root}
    for n in range(root + 1, len(parents)):
        if parents[n] in inside:
            inside.add(n)
    return sorted(inside)


@pytest.mark.slow
def test_a_search_with_nothing_kept_is_the_plain_puct_search_bit_for_bit():
    states, plain = _first_search()
    empty = empty_like_search(plain.search_tree)
    ours = _reused(jax.random.PRNGKey(3), states, empty, jnp.zeros(3, jnp.int32), jnp.ones(3, bool))
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(ours), jax.tree.leaves(plain), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=jax.tree_util.keystr(path))


@pytest.mark.parametrize("plies", [1, 2])
def test_the_subtree_under_the_moves_played_keeps_every_statistic_of_its_nodes(plies):
    _, out = _first_search()
    old = jax.device_get(out.search_tree)
    moves = _played(out.search_tree, plies)
    new, size = jax.device_get(_subtree(out.search_tree, jnp.asarray(moves)))
    for b in range(3):
        root = 0
        for p in range(plies):
            root = int(old.children_index[b, root, moves[b, p]])
        kept = _descendants(old.parents[b], root)
        assert size[b] == len(kept) == old.node_visits[b, root] > 1
        renumber = {o: n for n, o in enumerate(kept)}
        for name in ("node_visits", "raw_values", "node_values", "children_prior_logits", "children_visits",
                     "children_values", "children_rewards", "children_discounts"):
            np.testing.assert_array_equal(getattr(new, name)[b, : size[b]], getattr(old, name)[b, kept], err_msg=name)
        np.testing.assert_array_equal(new.embeddings.env.observation[b, : size[b]],
                                      old.embeddings.env.observation[b, kept])
        want_children = np.array([[renumber.get(int(c), -1) for c in row] for row in old.children_index[b, kept]])
        np.testing.assert_array_equal(new.children_index[b, : size[b]], want_children)
        assert new.parents[b, 0] == new.action_from_parent[b, 0] == mctx.Tree.NO_PARENT
        np.testing.assert_array_equal(new.parents[b, 1 : size[b]], [renumber[p] for p in old.parents[b, kept[1:]]])
        # The rest of the tree is empty, as mctx leaves the nodes no simulation has reached.
        assert (new.node_visits[b, size[b] :] == 0).all() and (new.children_index[b, size[b] :] == -1).all()
    assert_valid_tree(new)


def test_a_move_the_search_never_expanded_leaves_nothing_to_keep():
    _, out = _first_search()
    visits = np.asarray(out.search_tree.children_visits[:, 0])
    legal = ~np.asarray(out.search_tree.root_invalid_actions, bool)
    unvisited = np.where(legal & (visits == 0), np.arange(A), A).min(-1)
    has = unvisited < A
    assert has.any(), "some root move should be left unvisited at 48 simulations"
    moves = np.stack([np.where(has, unvisited, 0), np.full(3, -1)], 1).astype(np.int32)
    _, size = _subtree(out.search_tree, jnp.asarray(moves))
    assert (np.asarray(size)[has] == 0).all()


@pytest.mark.parametrize("plies", [1, 2])
def test_a_reused_root_starts_from_the_subtree_and_grows_into_a_valid_tree_of_the_full_budget(plies):
    states, out = _first_search()
    moves = _played(out.search_tree, plies)
    kept, size = _subtree(out.search_tree, jnp.asarray(moves))
    after = _states_after(states, moves)
    grown = _reused(jax.random.PRNGKey(5), after, kept, size, jnp.ones(3, bool)).search_tree
    assert_valid_tree(grown)
    kept, grown_np, size = jax.device_get((kept, grown, size))
    np.testing.assert_array_equal(grown_np.node_visits[:, 0], S + 1)  # the budget counts the kept visits
    for b in range(3):
        k = int(size[b])
        # The kept nodes are where they were, the new ones after them; only the kept nodes' statistics grew.
        np.testing.assert_array_equal(grown_np.parents[b, :k], kept.parents[b, :k])
        np.testing.assert_array_equal(grown_np.embeddings.env.observation[b, :k],
                                      kept.embeddings.env.observation[b, :k])
        assert (grown_np.node_visits[b, :k] >= kept.node_visits[b, :k]).all()
        assert (grown_np.parents[b, k : S + 1] < np.arange(k, S + 1)).all() and (grown_np.parents[b, k:] >= 0).all()
    # The root's prior is the network's at the new root, noised afresh (the stored one was the interior prior).
    fresh = _plain(jax.random.PRNGKey(5), after).search_tree
    np.testing.assert_allclose(jax.nn.softmax(grown.children_prior_logits[:, 0]),
                               jax.nn.softmax(fresh.children_prior_logits[:, 0]), atol=0.5)
    assert not np.allclose(grown_np.children_prior_logits[:, 0], kept.children_prior_logits[:, 0])


def test_a_root_kept_in_place_keeps_its_prior_and_a_full_budget_adds_nothing():
    """The same root again (no move played, as an analysis that grows its tree sees it): its searched prior is kept,
    not noised again, and a tree that already has the budget's visits is returned as it was."""
    states, out = _first_search()
    kept, size = _subtree(out.search_tree, jnp.full((3, 2), -1, jnp.int32))
    np.testing.assert_array_equal(size, S + 1)
    grown = _reused(jax.random.PRNGKey(5), states, kept, size, jnp.zeros(3, bool)).search_tree
    # Full already: no new simulation, and nothing changed.
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(grown), jax.tree.leaves(out.search_tree), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=jax.tree_util.keystr(path))


# ---------------------------------------------------------------- Gumbel MuZero: the root afresh, its children kept


@pytest.mark.slow
def test_a_gumbel_search_with_nothing_kept_is_the_plain_gumbel_search_bit_for_bit():
    states = _roots()
    plain = _plain_gumbel(jax.random.PRNGKey(3), states)
    empty, _ = _subtree(plain.search_tree, jnp.full((3, 2), -1, jnp.int32), tree_size("gumbel", S))
    ours = _reused_gumbel(jax.random.PRNGKey(3), states, empty_like_search(empty), jnp.zeros(3, jnp.int32))
    np.testing.assert_array_equal(ours.action, plain.action)
    np.testing.assert_array_equal(ours.action_weights, plain.action_weights)
    # The same tree, in more nodes: the plain one's, then nodes no simulation reached.
    padded = pad_tree(plain.search_tree, tree_size("gumbel", S))
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(ours.search_tree), jax.tree.leaves(padded),
                            strict=True):
        np.testing.assert_array_equal(a, b, err_msg=jax.tree_util.keystr(path))


@pytest.mark.parametrize("plies", [1, 2])
def test_a_reused_gumbel_root_runs_its_whole_budget_afresh_over_the_kept_subtrees_of_its_children(plies):
    states = _roots()
    first = _plain_gumbel(jax.random.PRNGKey(3), states)
    moves = _played(first.search_tree, plies)
    kept, size = _subtree(first.search_tree, jnp.asarray(moves), tree_size("gumbel", S))
    grown = _reused_gumbel(jax.random.PRNGKey(5), _states_after(states, moves), kept, size).search_tree
    assert_valid_tree(grown, root_afresh=True)
    kept, grown, size = jax.device_get((kept, grown, size))
    assert (size > 1).all()
    np.testing.assert_array_equal(grown.node_visits[:, 0], S + 1)  # sequential halving's own S visits at the root
    np.testing.assert_array_equal(grown.children_visits[:, 0].sum(-1), S)
    for b in range(3):
        k = int(size[b])
        np.testing.assert_array_equal(grown.parents[b, :k], kept.parents[b, :k])  # the kept nodes stay where they were
        for a in np.flatnonzero(kept.children_index[b, 0] >= 0):  # a kept child: its old visits plus the new ones
            c = kept.children_index[b, 0, a]
            assert grown.node_visits[b, c] == kept.node_visits[b, c] + grown.children_visits[b, 0, a]
        below = np.arange(k) > 0
        assert (grown.node_visits[b, :k][below] >= kept.node_visits[b, :k][below]).all()
