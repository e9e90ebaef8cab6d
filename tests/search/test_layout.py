"""A search tree as wide as the legal moves (azjax/search/layout.py): chess is searched over 256 slots, a node's
legal moves in order, and everything that reads the search sees the game's own actions."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax.games import make_game
from azjax.games.base import compact_actions
from azjax.games.chess import Chess
from azjax.games.connect_four import ConnectFour
from azjax.search import SearchSpec, choose_move, root_visit_counts, run_search
from azjax.search.layout import slot_action, slot_of, to_actions, to_slots
from azjax.search.readout import search_statistics
from azjax.search.reuse import subtree

CHESS = make_game("chess")
C4 = make_game("connect_four")


class SlotConnectFour(ConnectFour):
    """Connect Four searched over slots: its 7 columns are 7 slots while no column is full."""

    search_width = 7


class DenseChess(Chess):
    """Chess as it was searched before: a child per action of its 4,672."""

    search_width = None


def _like(cls: type, game) -> object:
    return cls(**{f.name: getattr(game, f.name) for f in dataclasses.fields(game)})


SLOT_C4 = _like(SlotConnectFour, C4)
DENSE_CHESS = _like(DenseChess, CHESS)


def _evaluator(num_actions: int):
    """A fixed, position-dependent evaluator: logits that differ per action, a value from the board."""

    def evaluate(params, states):
        del params
        obs = states.observation.astype(jnp.float32)
        flat = obs.reshape(obs.shape[0], -1)
        logits = jnp.sin(jnp.arange(num_actions) * 0.37)[None] * 2.0 + 0.01 * flat[:, :1]
        return logits, jnp.tanh(0.05 * flat.sum(axis=-1) * jnp.cos(flat[:, : flat.shape[1] // 2].sum(-1)))

    return evaluate


def _random_states(game, n: int, plies: int, seed: int = 0):
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(seed), n))
    step = jax.jit(jax.vmap(game.step))
    for i in range(plies):
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
        states = step(states, jax.random.categorical(jax.random.key(seed * 1000 + i), logits))
    return states


@pytest.fixture(scope="module")
def chess_states():
    return _random_states(CHESS, 4, 7)


def test_compact_actions_lists_the_true_entries_in_order_and_pads_with_minus_one():
    mask = jnp.array([[False, True, False, True, True], [False] * 5, [True] * 5])
    np.testing.assert_array_equal(compact_actions(mask, 4), [[1, 3, 4, -1], [-1] * 4, [0, 1, 2, 3]])


def test_slots_and_actions_map_both_ways():
    moves = jnp.array([[2, 5, 7, -1], [0, 1, -1, -1]])
    x = jnp.arange(16.0).reshape(2, 8)
    np.testing.assert_array_equal(to_slots(x, moves)[:, :3], [[2, 5, 7], [8, 9, 8]])
    dense = to_actions(jnp.array([[1.0, 2.0, 3.0, 9.0], [4.0, 5.0, 9.0, 9.0]]), moves, 8, fill=-1.0)
    np.testing.assert_array_equal(dense, [[-1, -1, 1, -1, -1, 2, -1, 3], [4, 5, -1, -1, -1, -1, -1, -1]])
    np.testing.assert_array_equal(slot_of(moves, jnp.array([7, 1])), [2, 1])
    np.testing.assert_array_equal(slot_of(moves, jnp.array([3, -1])), [-1, -1])  # not a legal move; none
    np.testing.assert_array_equal(slot_action(moves, jnp.array([1, -1])), [5, -1])


@pytest.mark.parametrize("kind", ["gumbel", "puct"])
def test_a_search_over_slots_that_cover_every_action_is_the_dense_search_bit_for_bit(kind):
    # Early Connect Four positions: every column is open at every node the search reaches, so each node's slots
    # are its actions in order and the two searches must agree on every bit.
    states = _random_states(C4, 6, 2, seed=3)
    spec = SearchSpec(kind=kind, num_simulations=6, max_num_considered_actions=4)
    evaluate = _evaluator(7)
    dense = jax.jit(lambda k, s: run_search(spec, C4, evaluate, None, k, s))(jax.random.key(5), states)
    slots = jax.jit(lambda k, s: run_search(spec, SLOT_C4, evaluate, None, k, s))(jax.random.key(5), states)
    reached = np.asarray(slots.search_tree.node_visits) > 0
    legal = np.asarray(slots.search_tree.embeddings.legal_action_mask)
    assert legal[reached].all(), "the test's premise: every reached node has all 7 columns open"
    np.testing.assert_array_equal(np.asarray(slots.moves), np.tile(np.arange(7), (6, 1)))
    for name in ("action", "action_weights"):
        np.testing.assert_array_equal(np.asarray(getattr(slots, name)), np.asarray(getattr(dense, name)), name)
    for field in dataclasses.fields(mctx.Tree):
        if field.name in ("embeddings", "extra_data"):
            continue
        np.testing.assert_array_equal(np.asarray(getattr(slots.search_tree, field.name)),
                                      np.asarray(getattr(dense.search_tree, field.name)), field.name)


@pytest.mark.parametrize("kind", ["gumbel", "puct"])
def test_a_chess_tree_keeps_256_children_a_node_and_gives_out_the_games_actions(kind, chess_states):
    spec = SearchSpec(kind=kind, num_simulations=24)
    out = jax.jit(lambda k, s: run_search(spec, CHESS, _evaluator(4672), None, k, s))(jax.random.key(1), chess_states)
    tree = out.search_tree
    assert tree.children_visits.shape == (4, 25, 256)
    legal = np.asarray(chess_states.legal_action_mask)
    rows = np.arange(4)
    assert legal[rows, np.asarray(out.action)].all()
    weights = np.asarray(out.action_weights)
    assert weights.shape == (4, 4672)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert (weights[~legal] == 0).all()
    visits = np.asarray(root_visit_counts(out))
    assert (visits[~legal] == 0).all() and (visits.sum(-1) == 24).all()
    # The slots are the root's legal moves in order.
    moves = np.asarray(out.moves)
    for b in range(4):
        np.testing.assert_array_equal(moves[b][moves[b] >= 0], np.flatnonzero(legal[b]))
    # The move chooser plays a legal action of the game.
    chosen = np.asarray(choose_move(spec, jax.random.key(2), out, jnp.array([True, False, True, False])))
    assert legal[rows, chosen].all()


def test_a_chess_search_over_slots_agrees_with_the_dense_search_where_its_noise_does_not_enter(chess_states):
    # PUCT without root noise is deterministic up to float sums: both trees choose the same most-visited moves.
    spec = SearchSpec(kind="puct", num_simulations=24, dirichlet_fraction=0.0)
    run = lambda g: jax.jit(lambda k, s: run_search(spec, g, _evaluator(4672), None, k, s))(  # noqa: E731
        jax.random.key(1), chess_states)
    slots, dense = run(CHESS), run(DENSE_CHESS)
    np.testing.assert_array_equal(np.asarray(root_visit_counts(slots)), np.asarray(root_visit_counts(dense)))
    np.testing.assert_allclose(np.asarray(slots.search_tree.node_values[:, 0]),
                               np.asarray(dense.search_tree.node_values[:, 0]), rtol=1e-5, atol=1e-6)


def test_the_chess_readout_names_the_games_actions_and_its_principal_variations_are_legal(chess_states):
    spec = SearchSpec(kind="puct", num_simulations=24, dirichlet_fraction=0.0)
    stats = jax.jit(lambda k, s: search_statistics(spec, CHESS, _evaluator(4672), None, k, s))(
        jax.random.key(1), chess_states)
    legal = np.asarray(chess_states.legal_action_mask)
    n = np.asarray(stats["n"])
    assert n.shape == (4, 4672) and (n[~legal] == 0).all()
    assert (np.asarray(stats["p"])[~legal] == 0).all()
    np.testing.assert_allclose(np.asarray(stats["p"]).sum(-1), 1.0, rtol=1e-5)
    assert legal[np.arange(4), np.asarray(stats["best"])].all()
    # Each PV replays as legal moves from its root.
    step = jax.jit(CHESS.step)
    for b in range(4):
        state = jax.tree.map(lambda x, b=b: x[b], chess_states)
        pv = [int(a) for a in np.asarray(stats["pv"][b]) if a >= 0]
        assert len(pv) >= 2
        for a in pv:
            assert bool(state.legal_action_mask[a]), (b, pv)
            state = step(state, a)


def test_reusing_a_chess_tree_descends_by_the_games_actions(chess_states):
    spec = SearchSpec(kind="puct", num_simulations=24, dirichlet_fraction=0.0)
    out = jax.jit(lambda k, s: run_search(spec, CHESS, _evaluator(4672), None, k, s))(jax.random.key(1), chess_states)
    visits = np.asarray(root_visit_counts(out))
    played = visits.argmax(-1)
    kept, size = jax.jit(subtree, static_argnums=(2, 3))(out.search_tree,
                                                         jnp.asarray(np.stack([played, -np.ones(4, int)], 1)),
                                                         25, CHESS)
    # The kept root is the played move's child: its visits are that child's, its state the position after it.
    np.testing.assert_array_equal(np.asarray(kept.node_visits[:, 0]), visits[np.arange(4), played])
    after = jax.vmap(CHESS.step)(chess_states, jnp.asarray(played))
    np.testing.assert_array_equal(np.asarray(kept.embeddings.env._x.board[:, 0]), np.asarray(after.env._x.board))
    assert (np.asarray(size) > 0).all()
    # A move that is not legal at the root keeps nothing.
    illegal = np.array([int(np.flatnonzero(~np.asarray(chess_states.legal_action_mask[b]))[0]) for b in range(4)])
    _, none = subtree(out.search_tree, jnp.asarray(np.stack([illegal, -np.ones(4, int)], 1)), 25, CHESS)
    np.testing.assert_array_equal(np.asarray(none), 0)
