"""Search-contempt (azjax/search/contempt.py, docs/methods.md section 1).

Searches run on Connect Four with a fixed random linear evaluator (so visit counts are non-trivial)
and on a hand-built synthetic game whose answers can be worked out. A recording `loop_fn` keeps the
tree before every simulation, so each test can replay the search step by step. The Connect Four searches
compile as training compiles them, since one test holds them to plain mctx bit for bit.
"""

from __future__ import annotations

import functools
import math
import types

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from production_xla import production_jit

from azjax.games import make_game
from azjax.search import make_recurrent_fn, root_fn
from azjax.search.contempt import (
    ContemptData,
    contempt_gumbel_muzero_policy,
    contempt_muzero_policy,
    contempt_stats,
    init_contempt_data,
)

B = 3  # roots per batch
S = 32  # simulations
K = 3  # n_scl for the invariant tests
PB_C_INIT, PB_C_BASE = 1.25, 19652.0
NUM_CONSIDERED = 4

GAME = make_game("connect_four")
A = GAME.num_actions


def _linear_evaluator(params: jax.Array, states) -> tuple[jax.Array, jax.Array]:
    x = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32)
    y = x @ params
    return y[:, :A], jnp.tanh(y[:, A])


PARAMS = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (int(np.prod(GAME.observation_shape)), A + 1))
RECURRENT_FN = make_recurrent_fn(GAME, _linear_evaluator)


def _roots():
    """B positions: the empty board and two positions a few random moves in."""
    states = jax.vmap(GAME.init)(jax.random.split(jax.random.PRNGKey(0), B))
    for i, moves in enumerate([[], [3, 3, 2], [0, 6, 1, 5]]):
        for m in moves:
            one = jax.tree.map(lambda x, i=i: x[i], states)
            one = GAME.step(one, jnp.int32(m))
            states = jax.tree.map(lambda xs, x, i=i: xs.at[i].set(x), states, one)
    return states


ROOT_STATES = _roots()


def _recording_loop(history: list):
    """A fori_loop stand-in that also returns (via `history`) the tree before each simulation."""

    def loop(lower, upper, body, init):
        def step(carry, sim):
            tree = carry[1]
            return body(sim, carry), tree.replace(embeddings=None)

        carry, trees = jax.lax.scan(step, init, jnp.arange(lower, upper))
        history.append(trees)
        return carry

    return loop


def _search_fn(key, n_scl, *, kind: str, mode: str, num_simulations: int = S, max_depth: int | None = None):
    """mode 'mctx': (plain mctx policy, contempt policy with n_scl=0, off); mode 'record': contempt
    with the traced `n_scl`, and the trees before each simulation (leaves [S, B, ...])."""
    root = root_fn(GAME, _linear_evaluator, PARAMS, ROOT_STATES)
    invalid = ~ROOT_STATES.legal_action_mask
    args = (PARAMS, key, root, RECURRENT_FN, num_simulations, invalid, max_depth)
    if kind == "puct":
        kw = dict(dirichlet_fraction=0.25, dirichlet_alpha=0.3, pb_c_init=PB_C_INIT, pb_c_base=PB_C_BASE)
        plain, contempt = mctx.muzero_policy, contempt_muzero_policy
    else:
        kw = dict(max_num_considered_actions=NUM_CONSIDERED, gumbel_scale=1.0)
        plain, contempt = mctx.gumbel_muzero_policy, contempt_gumbel_muzero_policy
    if mode == "mctx":
        return plain(*args, **kw), contempt(*args, n_scl=0, **kw)
    history: list = []
    out = contempt(*args, _recording_loop(history), n_scl=n_scl, **kw)
    return out, history[0]


_STATIC = ("kind", "mode", "num_simulations", "max_depth")
# Compiled as training compiles (the bit-for-bit test and the tests that share its programs) ...
_search = production_jit(_search_fn, static_argnames=_STATIC)
# ... and at the test session's faster options, for a program no bit-for-bit test builds.
_search_test_xla = jax.jit(_search_fn, static_argnames=_STATIC)


def _assert_same_search(a: mctx.PolicyOutput, b: mctx.PolicyOutput) -> None:
    ta, tb = a.search_tree, b.search_tree
    np.testing.assert_array_equal(ta.children_visits, tb.children_visits)
    np.testing.assert_array_equal(ta.children_index, tb.children_index)
    np.testing.assert_array_equal(ta.node_values, tb.node_values)
    np.testing.assert_array_equal(a.action, b.action)
    np.testing.assert_array_equal(a.action_weights, b.action_weights)


# ---------------------------------------------------------------- 1. exact reduction to plain mctx


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_off_or_untriggered_equals_plain_mctx(kind):
    for seed in range(3):
        key = jax.random.PRNGKey(100 + seed)
        plain, off = _search(key, 0, kind=kind, mode="mctx")
        _assert_same_search(plain, off)
        # n_scl = S can never trigger: a depth-1 node has at most S - 1 child visits.
        for n_scl in (S, S + 5):
            contempt, _ = _search(key, n_scl, kind=kind, mode="record")
            _assert_same_search(plain, contempt)
            assert not np.asarray(contempt_stats(contempt.search_tree).frozen).any()


# ---------------------------------------------------------------- 2. freezing invariants


def _true_depths(parents: np.ndarray) -> np.ndarray:
    """[B, N] depth from the parent pointers; -1 for nodes not in the tree."""
    depth = np.full(parents.shape, -1)
    depth[:, 0] = 0
    for b in range(parents.shape[0]):
        for n in range(1, parents.shape[1]):  # a node's parent always has a smaller index
            if parents[b, n] >= 0:
                depth[b, n] = depth[b, parents[b, n]] + 1
    return depth


def _check_freezing(out: mctx.PolicyOutput, history, k: int) -> int:
    """Checks the freezing contract at every simulation; returns the number of frozen nodes."""
    tree = out.search_tree
    stats = contempt_stats(tree)
    depth = _true_depths(np.asarray(tree.parents))
    np.testing.assert_array_equal(stats.depth, depth)
    odd = (depth > 0) & (depth % 2 == 1)

    # The state after each simulation: history[t + 1] is the tree after simulation t.
    visits = np.concatenate([history.children_visits[1:], tree.children_visits[None]])  # [S, B, N, A]
    frozen = np.concatenate([history.extra_data.frozen[1:], stats.frozen[None]])  # [S, B, N]
    counts = np.concatenate([history.extra_data.frozen_counts[1:], stats.frozen_counts[None]])
    sums = visits.sum(-1)
    # After every simulation: frozen <=> odd depth and child-visit sum >= n_scl (so no even node freezes).
    np.testing.assert_array_equal(frozen, odd[None] & (sums >= k))
    final_frozen = np.asarray(stats.frozen)
    final_counts = np.asarray(stats.frozen_counts)
    np.testing.assert_array_equal(final_counts.sum(-1), np.where(final_frozen, k, 0))
    for b, n in zip(*np.nonzero(final_frozen), strict=True):
        t0 = int(np.argmax(frozen[:, b, n]))  # the simulation that froze it
        assert sums[t0, b, n] == k  # exactly n_scl completed visits
        np.testing.assert_array_equal(final_counts[b, n], visits[t0, b, n])
        np.testing.assert_array_equal(counts[t0:, b, n], np.broadcast_to(final_counts[b, n], counts[t0:, b, n].shape))
        assert not counts[:t0, b, n].any()
        # Children with no frozen visits get no further visits; the others only gain.
        end = visits[-1, b, n]
        zero = final_counts[b, n] == 0
        np.testing.assert_array_equal(end[zero], 0)
        assert (end >= final_counts[b, n]).all()
    return int(final_frozen.sum())


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_freezing_invariants(kind):
    num_frozen = 0
    for seed in range(2):
        out, history = _search(jax.random.PRNGKey(7 + seed), K, kind=kind, mode="record")
        num_frozen += _check_freezing(out, history, K)
    assert num_frozen >= 4, "the test position should freeze some nodes"


def test_freezing_with_max_depth_cutoff():
    """With max_depth some simulations create no node (the tree-scan fallback); the contract still holds."""
    max_depth = 3
    out, history = _search_test_xla(jax.random.PRNGKey(3), K, kind="puct", mode="record", max_depth=max_depth)
    parents = np.asarray(out.search_tree.parents)
    assert (parents[:, 1:] == mctx.Tree.NO_PARENT).any(), "expected simulations that hit max_depth"
    assert _true_depths(parents).max() <= max_depth
    assert _check_freezing(out, history, K) >= B


# ---------------------------------------------------------------- 4. every selection follows the rule


def _puct_scores(tree: mctx.Tree, node: jax.Array) -> jax.Array:
    """mctx's PUCT score (without its 1e-7 tie-break noise) on an unbatched tree."""
    visits = tree.children_visits[node]
    node_visit = tree.node_visits[node]
    pb_c = PB_C_INIT + jnp.log((node_visit + PB_C_BASE + 1.0) / PB_C_BASE)
    prior = jax.nn.softmax(tree.children_prior_logits[node])
    score = mctx.qtransform_by_parent_and_siblings(tree, node) + jnp.sqrt(node_visit) * pb_c * prior / (visits + 1)
    return jnp.where((node == 0) & tree.root_invalid_actions.astype(bool), -jnp.inf, score)


def _gumbel_interior_scores(tree: mctx.Tree, node: jax.Array) -> jax.Array:
    """Full Gumbel MuZero's interior score: pi'(a) - N(a) / (1 + sum N)."""
    visits = tree.children_visits[node]
    probs = jax.nn.softmax(tree.children_prior_logits[node] + mctx.qtransform_completed_by_mix_value(tree, node))
    return probs - visits / (1 + visits.sum())


@functools.partial(jax.jit, static_argnames="kind")
def _all_scores(history: mctx.Tree, *, kind: str):
    """Normal-rule scores [S, B, N, A] of every node before every simulation, and the Gumbel root's
    own choice [S, B]."""
    num_nodes = history.node_visits.shape[-1]
    nodes = jnp.arange(num_nodes)
    score_fn = _puct_scores if kind == "puct" else _gumbel_interior_scores
    per_tree = jax.vmap(lambda t: jax.vmap(lambda n: score_fn(t, n))(nodes))
    scores = jax.vmap(per_tree)(history)
    if kind == "puct":
        return scores, None
    root_choice = functools.partial(
        mctx.gumbel_muzero_root_action_selection,
        num_simulations=S,
        max_num_considered_actions=NUM_CONSIDERED,
        qtransform=mctx.qtransform_completed_by_mix_value,
    )
    roots = jax.vmap(jax.vmap(lambda t: root_choice(jax.random.PRNGKey(0), t, jnp.int32(0))))(history)
    return scores, roots


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_every_selection_follows_the_rule(kind):
    """Replays each simulation: at even depths (root included) and at unfrozen odd-depth nodes the
    chosen child is the normal rule's argmax; at frozen nodes it has frozen visits."""
    out, history = _search(jax.random.PRNGKey(11), K, kind=kind, mode="record")
    scores, roots = _all_scores(history, kind=kind)
    scores = np.asarray(scores)
    depth = np.asarray(contempt_stats(out.search_tree).depth)
    visits = np.concatenate([history.children_visits, out.search_tree.children_visits[None]])
    frozen, counts = np.asarray(history.extra_data.frozen), np.asarray(history.extra_data.frozen_counts)
    checked = {"normal_even": 0, "normal_odd": 0, "frozen": 0}
    for t in range(S):
        for b in range(B):
            for n, a in zip(*np.nonzero(visits[t + 1, b] - visits[t, b]), strict=True):  # the simulation's path
                if frozen[t, b, n]:
                    assert depth[b, n] % 2 == 1
                    assert counts[t, b, n, a] > 0
                    checked["frozen"] += 1
                    continue
                if kind == "gumbel" and n == 0:
                    assert a == roots[t, b]
                else:
                    s = scores[t, b, n]
                    assert s[a] >= s.max() - 1e-6, (t, b, n, a, s)
                checked["normal_odd" if depth[b, n] % 2 else "normal_even"] += 1
    assert min(checked.values()) > 0, checked


# ---------------------------------------------------------------- synthetic game with known answers

SYN_A = 4
SYN_BATCH, SYN_SIMS = 8, 160  # one compiled synthetic search per policy, shared by the tests below
SYN_PRIOR = np.log(np.array([0.4, 0.3, 0.2, 0.1], np.float32))


def _syn_recurrent_fn(params, key, action, depth):
    """A game where every move is legal, nothing is ever won (reward 0, value 0, discount -1) and
    every non-root node has the prior [0.4, 0.3, 0.2, 0.1]; the embedding is the depth."""
    del params, key, action
    n = depth.shape[0]
    out = mctx.RecurrentFnOutput(
        reward=jnp.zeros(n),
        discount=-jnp.ones(n),
        prior_logits=jnp.broadcast_to(SYN_PRIOR, (n, SYN_A)),
        value=jnp.zeros(n),
    )
    return out, depth + 1


def _syn_root(batch: int) -> mctx.RootFnOutput:
    # The root plays action 0 almost surely (PUCT would need ~3000 visits to try another).
    logits = jnp.broadcast_to(jnp.array([8.0, 0.0, 0.0, 0.0]), (batch, SYN_A))
    return mctx.RootFnOutput(prior_logits=logits, value=jnp.zeros(batch), embedding=jnp.zeros(batch, jnp.int32))


@functools.partial(jax.jit, static_argnames=("kind", "batch", "num_simulations"))
def _syn_search(key, n_scl, *, kind: str, batch: int, num_simulations: int):
    root = _syn_root(batch)
    if kind == "puct":
        return contempt_muzero_policy(
            None, key, root, _syn_recurrent_fn, num_simulations, n_scl=n_scl, dirichlet_fraction=0.0
        )
    return contempt_gumbel_muzero_policy(
        None, key, root, _syn_recurrent_fn, num_simulations, n_scl=n_scl, max_num_considered_actions=1
    )


def _wilson_hilferty_chi2(dof: int, z: float) -> float:
    """Upper chi-square quantile for a standard-normal quantile z (accurate to ~1% for dof >= 3)."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_post_freeze_shares_match_frozen_distribution(kind):
    """At the depth-1 node (nearly every simulation passes it) the visits after freezing are i.i.d.
    draws from N_scl / n_scl: Pearson chi-square over 8 independent trees at alpha = 1e-3."""
    batch, k = SYN_BATCH, 10
    out = _syn_search(jax.random.PRNGKey(2024), k, kind=kind, batch=batch, num_simulations=SYN_SIMS)
    tree = out.search_tree
    stats = contempt_stats(tree)
    node = np.asarray(tree.children_index[:, 0, 0])  # the depth-1 node after the root's action 0
    rows = np.arange(batch)
    assert (node > 0).all() and np.asarray(stats.frozen)[rows, node].all()
    frozen = np.asarray(stats.frozen_counts)[rows, node]  # [batch, A]
    post = np.asarray(tree.children_visits)[rows, node] - frozen
    total = post.sum(-1, keepdims=True)
    assert total.sum() >= 1000
    # The frozen mix is not degenerate (PUCT with zero values follows the prior [.4, .3, .2, .1]).
    assert ((frozen > 0).sum(-1) >= 3).all(), frozen
    expected = total * frozen / k
    support = frozen > 0
    assert (post[~support] == 0).all()
    chi2 = float((((post - expected) ** 2)[support] / expected[support]).sum())
    dof = int((support.sum(-1) - 1).sum())
    limit = _wilson_hilferty_chi2(dof, z=3.090)  # upper 1e-3 quantile
    assert chi2 < limit, (chi2, dof, limit, frozen, post)


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_n_scl_one_plays_a_single_line(kind):
    """n_scl = 1: an opponent node freezes after one visit, so all its later visits go to the child
    chosen first; with zero values that is the prior's favourite (action 0) for PUCT and Gumbel."""
    batch = SYN_BATCH
    out = _syn_search(jax.random.PRNGKey(5), 1, kind=kind, batch=batch, num_simulations=SYN_SIMS)
    tree = out.search_tree
    stats = contempt_stats(tree)
    visits = np.asarray(tree.children_visits)
    depth = np.asarray(stats.depth)
    odd = (depth % 2 == 1) & (visits.sum(-1) > 0)
    assert odd.any()
    np.testing.assert_array_equal(np.asarray(stats.frozen), odd)
    assert ((visits > 0).sum(-1)[odd] == 1).all()
    node = np.asarray(tree.children_index[:, 0, 0])
    d1 = visits[np.arange(batch), node]
    np.testing.assert_array_equal(d1[:, 1:], 0)
    np.testing.assert_array_equal(d1[:, 0], np.asarray(tree.node_visits)[np.arange(batch), node] - 1)


def test_static_and_traced_n_scl_agree():
    key = jax.random.PRNGKey(9)
    traced = _syn_search(key, 3, kind="puct", batch=SYN_BATCH, num_simulations=SYN_SIMS)  # already compiled
    static = jax.jit(
        lambda k: contempt_muzero_policy(
            None, k, _syn_root(SYN_BATCH), _syn_recurrent_fn, SYN_SIMS, n_scl=3, dirichlet_fraction=0.0
        )
    )(key)
    _assert_same_search(traced, static)
    np.testing.assert_array_equal(contempt_stats(traced.search_tree).frozen_counts,
                                  contempt_stats(static.search_tree).frozen_counts)


def test_n_scl_validation_and_stats():
    for bad, err in [(0, ValueError), (-2, ValueError), (True, TypeError), (2.5, TypeError)]:
        with pytest.raises(err):
            init_contempt_data(1, 4, 3, bad)
    data = init_contempt_data(2, 4, 3, 2)
    assert isinstance(data, ContemptData)
    assert data.frozen.shape == (2, 5) and data.frozen_counts.shape == (2, 5, 3)
    np.testing.assert_array_equal(data.depth, [[0, -1, -1, -1, -1]] * 2)
    with pytest.raises(TypeError):  # a plain mctx tree (n_scl=0) has no contempt data
        contempt_stats(types.SimpleNamespace(extra_data=None))
