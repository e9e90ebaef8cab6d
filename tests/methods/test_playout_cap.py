"""KataGo's playout caps, forced playouts and policy-target pruning (docs/methods.md section 6): the draw, the
forced-playout count, pruning by hand and on real trees (against mctx's own PUCT), and every switch at its
off value equal to plain mctx / the visit-count target, bit for bit (compiled as training compiles them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from production_xla import production_jit

from azjax.methods import playout_cap as pc

B, A, SIMS = 8, 5, 48


def _recurrent_fn(params, key, action, embedding):
    """A synthetic two-player game: the embedding is a running hash of the path; values and priors follow
    from it, never terminal."""
    del params, key
    h = (embedding * 31 + action + 7) % 1009
    value = jnp.sin(h.astype(jnp.float32) * 0.37) * 0.8
    logits = jnp.cos(h.astype(jnp.float32)[:, None] * (1.0 + jnp.arange(A)))
    out = mctx.RecurrentFnOutput(reward=jnp.zeros(h.shape), discount=-jnp.ones(h.shape), prior_logits=logits,
                                 value=value)
    return out, h


def _root() -> mctx.RootFnOutput:
    logits = jnp.log(jnp.array([0.5, 0.25, 0.15, 0.07, 0.03]))
    return mctx.RootFnOutput(prior_logits=jnp.tile(logits, (B, 1)), value=jnp.zeros(B),
                             embedding=jnp.arange(B, dtype=jnp.int32))


INVALID = jnp.zeros((B, A), bool).at[0, 4].set(True)


def _forced_search(key, k):
    return pc.forced_muzero_policy(None, key, _root(), _recurrent_fn, SIMS, INVALID, k=k, dirichlet_fraction=0.25)


# Forced playouts at k = 0 (and at a k that never forces) are compiled as training compiles, for the bit-for-bit
# test against `_plain`; at k = 2 no such test needs that, and the test session's faster options build it.
_forced_as_trained = production_jit(_forced_search, static_argnames="k")
_forced_fast = jax.jit(_forced_search, static_argnames="k")


@production_jit
def _plain(key):
    return mctx.muzero_policy(None, key, _root(), _recurrent_fn, SIMS, INVALID, dirichlet_fraction=0.25)


def _same(a: mctx.PolicyOutput, b: mctx.PolicyOutput) -> None:
    np.testing.assert_array_equal(a.action, b.action)
    assert np.asarray(a.action_weights).tobytes() == np.asarray(b.action_weights).tobytes()
    np.testing.assert_array_equal(a.search_tree.children_visits, b.search_tree.children_visits)
    assert np.asarray(a.search_tree.node_values).tobytes() == np.asarray(b.search_tree.node_values).tobytes()


def test_draw_full_search() -> None:
    assert bool(pc.draw_full_search(jax.random.key(0), (1000,), 1.0).all())
    assert not bool(pc.draw_full_search(jax.random.key(0), (1000,), 0.0).any())
    share = float(pc.draw_full_search(jax.random.key(1), (20000,), 0.25).mean())
    assert abs(share - 0.25) < 5 * np.sqrt(0.25 * 0.75 / 20000)


def test_forced_playouts_formula() -> None:
    n = pc.forced_playouts(jnp.array([[0.5, 0.3, 0.2]]), jnp.array([17]), 2.0)
    np.testing.assert_allclose(n, np.sqrt(2 * np.array([[0.5, 0.3, 0.2]]) * 17), rtol=1e-6)


@pytest.mark.slow
def test_off_equals_plain_mctx() -> None:
    """k = 0 is mctx.muzero_policy; so is k > 0 while no child is ever forced (n_forced < 1 <= N(c)), which
    checks that the forced path repeats mctx's noise, search and sampling exactly."""
    key = jax.random.key(0)
    plain = _plain(key)
    _same(_forced_as_trained(key, 0.0), plain)
    _same(_forced_as_trained(key, 1e-9), plain)
    assert pc.pruned_policy_target(plain.search_tree, 0.0) is not None
    target = pc.pruned_policy_target(plain.search_tree, 0.0)
    assert np.asarray(target).tobytes() == np.asarray(plain.action_weights).tobytes()


def test_forced_playouts_reach_every_visited_child() -> None:
    """With k = 2 every visited root child ends with at least about n_forced visits (it is forced while below);
    the tree differs from plain mctx, and the search's invalid action stays unvisited."""
    key = jax.random.key(1)
    out = _forced_fast(key, 2.0)
    visits = np.asarray(out.search_tree.children_visits[:, 0])
    prior = np.asarray(jax.nn.softmax(out.search_tree.children_prior_logits[:, 0]))
    total = visits.sum(-1, keepdims=True)
    # A child below n_forced at the last simulation would have been forced then: N(c) + 1 >= n_forced(c; N - 1).
    floor = np.sqrt(2 * prior * (total - 1))
    assert ((visits == 0) | (visits + 1 >= floor - 1e-4)).all()
    assert visits[0, 4] == 0
    plain = np.asarray(_plain(key).search_tree.children_visits[:, 0])
    assert not np.array_equal(visits, plain)
    # Without forcing, some visited child stays below that floor (so the check above has teeth).
    assert ((plain > 0) & (plain + 1 < floor - 1e-4)).any()


def test_pruning_by_hand() -> None:
    """c* = child 0: PUCT(c*) = 0.6 + 2/11. Child 1 keeps N_want = 1.2 / (PUCT(c*) - 0.5) - 1 = 3.258 (it
    loses 1.742 < n_forced = 3.194); child 2 would keep 0.375 <= 1 visit: pruned. A flipped value (the
    opponent's Q) would keep child 2."""
    visits = jnp.array([10.0, 5.0, 2.0])
    value, factor, prior = jnp.array([0.6, 0.5, 0.2]), jnp.array([2.0, 1.2, 0.8]), jnp.array([0.5, 0.3, 0.2])
    best = 0.6 + 2.0 / 11.0
    got = pc.prune_visit_counts(visits, value, factor, prior, 2.0)
    np.testing.assert_allclose(got, [10.0, 1.2 / (best - 0.5) - 1.0, 0.0], rtol=1e-5)
    # The cap: at most n_forced removed (child 1 with a tiny factor would otherwise drop to 0).
    capped = pc.prune_visit_counts(visits, value, jnp.array([2.0, 0.01, 0.8]), prior, 2.0)
    np.testing.assert_allclose(capped[1], 5.0 - np.sqrt(2 * 0.3 * 17), rtol=1e-5)
    # k = 0: nothing removed (children at one visit or none are still dropped by the pruning step).
    np.testing.assert_array_equal(pc.prune_visit_counts(visits, value, factor, prior, 0.0), visits)
    flipped = pc.prune_visit_counts(visits, -value, factor, prior, 2.0)
    assert float(flipped[2]) > 1.0 and not np.allclose(flipped, got)


def test_pruned_target_on_real_trees() -> None:
    """After a forced search: c* keeps its visits; every other kept child has PUCT(pruned) <= PUCT(c*) within
    rounding (it was reduced to, not past, what it needed) or lost exactly n_forced; none keeps <= 1 visit;
    the target is normalised and puts no weight on invalid actions."""
    out = _forced_fast(jax.random.key(2), 2.0)
    tree = out.search_tree
    target = np.asarray(pc.pruned_policy_target(tree, 2.0))
    np.testing.assert_allclose(target.sum(-1), 1.0, rtol=1e-6)
    assert target[0, 4] == 0
    value, factor, prior = jax.vmap(pc.puct_parts)(tree, jnp.zeros(B, jnp.int32))
    visits = np.asarray(tree.children_visits[:, 0], np.float64)
    pruned = np.asarray(pc.prune_visit_counts(tree.children_visits[:, 0], value, factor, prior, 2.0), np.float64)
    value, factor = np.asarray(value), np.asarray(factor)
    best = visits.argmax(-1)
    rows = np.arange(B)
    assert (pruned[rows, best] == visits[rows, best]).all()
    best_score = (value + factor / (visits + 1))[rows, best][:, None]
    n_forced = np.sqrt(2 * np.asarray(prior) * visits.sum(-1, keepdims=True))
    other = np.arange(A)[None] != best[:, None]
    kept = other & (pruned > 0)
    at_parity = np.abs(value + factor / (pruned + 1) - best_score) < 1e-4
    lost_cap = np.abs(visits - pruned - n_forced) < 1e-4
    untouched = pruned == visits
    assert (at_parity | lost_cap | untouched)[kept].all()
    assert (pruned[kept] > 1).all() and (pruned <= visits).all()
    np.testing.assert_allclose(target, pruned / pruned.sum(-1, keepdims=True), rtol=1e-5)
    assert (pruned < visits)[other].any(), "some forced visits should be removed"


@pytest.mark.parametrize("search, k", [(_forced_as_trained, 0.0), (_forced_fast, 2.0)], ids=["off", "k2"])
def test_forced_root_selection_respects_invalid_actions(search: Callable, k: float) -> None:
    out = search(jax.random.key(3), k)
    assert int(out.search_tree.children_visits[0, 0, 4]) == 0


# ---------------------------------------------------------------- the search-policy seam


def test_a_padded_tree_reads_as_the_tree_it_pads() -> None:
    from azjax.methods import go_exploit, tdleaf

    tree = _plain(jax.random.key(0)).search_tree
    padded = pc.pad_tree(tree, SIMS + 21)
    assert padded.node_visits.shape == (B, SIMS + 21)
    for name in ("visit_counts", "visit_probs", "value", "qvalues"):
        np.testing.assert_array_equal(getattr(padded.summary(), name), getattr(tree.summary(), name))
    for x, y in zip(tdleaf.principal_variation(padded, SIMS), tdleaf.principal_variation(tree), strict=True):
        np.testing.assert_array_equal(x, y)
    n = tree.node_visits.shape[1] - 1
    valid = go_exploit.search_state_candidates(padded, jnp.ones(B, bool),
                                               get_state=lambda e: _Terminal(jnp.zeros(e.shape, bool)))[1]
    assert not bool(valid.reshape(B, -1)[:, n:].any()) and bool(valid.reshape(B, -1)[:, :n].any())


class _Terminal(NamedTuple):
    """A stand-in state with only the `terminated` field that `search_state_candidates` reads."""

    terminated: jax.Array


def _connect_four_search_policies():
    from azjax.games import make_game
    from azjax.methods.alphazero import FullSearch
    from azjax.search import SearchSpec

    game = make_game("connect_four")
    w = 0.3 * jax.random.normal(jax.random.key(1), (int(np.prod(game.observation_shape)), game.num_actions + 1))

    def evaluate(params, states):
        y = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32) @ params
        return y[:, :-1], jnp.tanh(y[:, -1])

    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 4))
    spec = SearchSpec(kind="puct", num_simulations=8)
    return game, w, evaluate, states, spec, FullSearch(spec, game, evaluate)


@pytest.mark.slow
def test_playout_caps_at_full_prob_one_search_as_alphazero_does_bit_for_bit() -> None:
    game, w, evaluate, states, spec, full = _connect_four_search_policies()
    capped = pc.PlayoutCapSearch(spec, game, evaluate, full_prob=1.0, fast_simulations=2)
    (ours, _), (az, _) = (jax.jit(p.search)(w, jax.random.key(2), states) for p in (capped, full))
    _same(ours.out, az.out)
    assert np.asarray(ours.policy_target).tobytes() == np.asarray(az.policy_target).tobytes()
    assert bool(ours.trained.all()) and bool(az.trained.all())


@pytest.mark.slow
def test_playout_caps_search_fully_with_probability_p_and_train_on_those_moves_only() -> None:
    from azjax import replay as rb

    game, w, evaluate, states, spec, _ = _connect_four_search_policies()
    capped = pc.PlayoutCapSearch(spec, game, evaluate, full_prob=0.3, fast_simulations=2)
    search = jax.jit(capped.search)
    full, total = [], []
    for i in range(40):
        searched, stats = search(w, jax.random.key(i), states)
        visits = int(searched.out.search_tree.summary().visit_counts[0].sum())
        assert visits == (8 if bool(searched.trained[0]) else 2)  # a full search or a fast one, for all games
        assert bool((searched.trained == searched.trained[0]).all())
        full.append(int(stats["full_search_moves"]))
        total.append(int(stats["searched_moves"]))
    share = sum(full) / sum(total)
    assert 0 < share < 1 and abs(share - 0.3) < 4 * np.sqrt(0.21 / 40)
    # What the replay keeps decides what trains.
    replay = rb.init_replay(4, (1,), jnp.float32, 7, extras=capped.records)
    replay = rb.write(replay, jnp.int32(0), jnp.zeros((4, 1)), searched.policy_target, jnp.zeros(4, jnp.int32),
                      jnp.zeros(4, jnp.int32), capped.record(searched))
    np.testing.assert_array_equal(capped.trainable(replay), searched.trained)


def test_forced_playouts_give_the_pruned_policy_target() -> None:
    game, w, evaluate, states, spec, _ = _connect_four_search_policies()
    forced = pc.PlayoutCapSearch(spec, game, evaluate, full_prob=1.0, fast_simulations=2, forced_k=2.0)
    searched, _ = jax.jit(forced.search)(w, jax.random.key(3), states)
    np.testing.assert_array_equal(searched.policy_target, pc.pruned_policy_target(searched.out.search_tree, 2.0))
    with pytest.raises(ValueError, match="PUCT"):
        pc.PlayoutCapSearch(spec.__class__(kind="gumbel"), game, evaluate, 1.0, 2, forced_k=2.0)


@pytest.mark.slow
def test_playout_caps_compose_with_search_contempt() -> None:
    """The fast search's contempt tree (its per-node depth and frozen counts too) is padded to the full one's
    shape, so the two can share a `lax.cond`."""
    import dataclasses

    game, w, evaluate, states, spec, _ = _connect_four_search_policies()
    contempt = dataclasses.replace(spec, n_scl=2)
    capped = pc.PlayoutCapSearch(contempt, game, evaluate, full_prob=0.5, fast_simulations=2)
    search = jax.jit(capped.search)
    seen = set()
    for i in range(12):
        searched, _ = search(w, jax.random.key(i), states)
        visits = int(searched.out.search_tree.summary().visit_counts[0].sum())
        assert visits == (8 if bool(searched.trained[0]) else 2)
        seen.add(bool(searched.trained[0]))
    assert seen == {True, False}
