"""Tree reuse in the engine (azjax/engines/engine.py, azjax/search/reuse.py): a search continues the last one's tree
when the position is its root or one or two moves below it, and gives the old results when it is off.

A tiny untrained 7x7 Go network with a PUCT evaluation search (and a Gumbel one); one compiled search per engine,
its tree as big as an analysis grows (16 x the visits), the visits an input.
"""

from __future__ import annotations

import io

import jax
import mctx
import numpy as np
import pytest
from conftest import random_params
from production_xla import PRODUCTION_XLA
from search_trees import assert_valid_tree

from azjax.config import Config
from azjax.engines.engine import Engine, clear_compiled_searches
from azjax.engines.lc0 import SearchResult
from azjax.engines.uci import UCIEngine
from azjax.games import make_game

VISITS = 16
CONFIG = Config(game="go_7x7", num_blocks=1, num_channels=8, eval_simulations=VISITS, search="puct")


@pytest.fixture(scope="module")
def params():
    return random_params(CONFIG, make_game("go_7x7"))


def _same_search(a: SearchResult, b: SearchResult) -> None:
    """Equal in every field but the timing and the visits a search started with."""
    da, db = a.to_dict(), b.to_dict()
    for key in ("seconds", "reused_visits"):
        da.pop(key), db.pop(key)
    assert da == db


def _most_visited_path(tree: mctx.Tree, plies: int) -> tuple[list[int], int]:
    """The actions of the most visited path of `plies` moves from the root of a batch-of-one tree, and its node."""
    t = jax.device_get(tree)
    node, actions = 0, []
    for _ in range(plies):
        actions.append(int(np.argmax(t.children_visits[0, node])))
        node = int(t.children_index[0, node, actions[-1]])
    return actions, node


@pytest.fixture
def engines_compiled_as_users_run_them(monkeypatch):
    """Engines whose searches compile with XLA's defaults (tests/production_xla.py), not the session's faster
    options: under those, the reusing and the plain search round the root's network value differently in its last
    bit. The engine's compiled searches are dropped before and after, so none crosses between the two options."""
    clear_compiled_searches()
    monkeypatch.setattr(Engine, "compile", lambda self, fn, *args: fn.lower(*args).compile(PRODUCTION_XLA))
    yield
    clear_compiled_searches()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["puct", "gumbel"])
@pytest.mark.usefixtures("engines_compiled_as_users_run_them")
def test_with_nothing_to_keep_the_reusing_engine_searches_as_the_engine_without_reuse_bit_for_bit(params, kind):
    config = CONFIG.replace(search=kind)
    reusing, fresh = Engine(config, params), Engine(config, params, tree_reuse=False)
    assert reusing.reuses_trees and not fresh.reuses_trees
    for _ in range(3):
        reusing.kept = None
        a, b = reusing.search(), fresh.search()
        _same_search(a, b)
        assert a.reused_visits == b.reused_visits == 0
        for e in (reusing, fresh):
            e.position.play_action(a.best_action)


@pytest.mark.slow
def test_after_a_move_and_a_reply_the_search_starts_from_the_subtree_s_statistics_exactly(params):
    engine = Engine(CONFIG, params)
    engine.search()
    before = jax.device_get(engine.kept.tree)
    actions, node = _most_visited_path(engine.kept.tree, 2)
    n = int(before.node_visits[0, node])
    assert n >= 3, "the test needs a reply the first search looked at"
    for a in actions:
        engine.position.play_action(a)
    # A budget of the kept visits: the search adds none, so it reads out the subtree exactly as it was.
    result = engine.search(visits=n - 1)
    assert result.reused_visits == result.visits == n - 1
    returns = before.children_rewards[0, node] + before.children_discounts[0, node] * before.children_values[0, node]
    for s in result.stats:
        assert s.n == before.children_visits[0, node, s.action]
        if s.n:
            assert s.q == returns[s.action]
    assert result.root_value == before.node_values[0, node]
    assert result.net_value == before.raw_values[0, node]


@pytest.mark.slow
def test_growing_a_kept_tree_in_place_gives_a_valid_tree_with_the_old_nodes_first(params):
    """An analysis that doubles its visits (UCI `go infinite`, GTP `lz-analyze`) grows one tree."""
    engine = Engine(CONFIG, params)
    first = engine.search()
    small = jax.device_get(engine.kept.tree)
    grown = engine.search(visits=2 * VISITS)
    assert grown.reused_visits == first.visits == VISITS and grown.visits == 2 * VISITS
    big = jax.device_get(engine.kept.tree)
    assert_valid_tree(big)
    np.testing.assert_array_equal(big.parents[:, : VISITS + 1], small.parents[:, : VISITS + 1])
    np.testing.assert_array_equal(big.children_prior_logits[:, 0], small.children_prior_logits[:, 0])
    for s in grown.stats:
        assert s.n >= next(t.n for t in first.stats if t.action == s.action)


def test_a_tree_bigger_than_the_next_search_is_searched_on_in_its_own_size_and_nothing_is_dropped(params):
    """After an analysis grew the tree past the engine's visits, the move and the reply keep their whole subtree."""
    engine = Engine(CONFIG, params)
    engine.search()
    engine.search(visits=2 * VISITS)
    big = jax.device_get(engine.kept.tree)
    actions, node = _most_visited_path(engine.kept.tree, 2)
    n = int(big.node_visits[0, node])
    assert n - 1 > VISITS, "the test needs a subtree bigger than a search of VISITS"
    for a in actions:
        engine.position.play_action(a)
    result = engine.search()
    assert result.reused_visits == result.visits == n - 1  # more than the budget already: no new visits
    assert engine.kept.tree.node_visits.shape[1] == engine.max_visits + 1  # one tree size for every search
    assert_valid_tree(jax.device_get(engine.kept.tree))
    for s in result.stats:
        assert s.n == big.children_visits[0, node, s.action]


def test_a_position_that_does_not_follow_the_last_search_is_searched_afresh(params):
    engine = Engine(CONFIG, params)
    pos = engine.position
    engine.search()
    actions, _ = _most_visited_path(engine.kept.tree, 1)
    pos.play_action(actions[0])
    assert engine.search().reused_visits > 0  # one move below the last root
    pos.undo()
    assert engine.search().reused_visits == 0  # above it
    for _ in range(3):
        pos.play_action(int(np.flatnonzero(np.asarray(pos.state.legal_action_mask))[0]))
    assert engine.search().reused_visits == 0  # three moves below it
    assert engine.search().reused_visits == VISITS  # the same position again
    pos.set_komi(0.5)  # the same moves in a game under another komi
    assert engine.search().reused_visits == 0


def test_a_gumbel_engine_keeps_the_subtrees_below_a_root_it_searches_afresh(params):
    # 4 considered moves: 16 visits give the chosen one a subtree (16 considered would visit each once).
    engine = Engine(CONFIG.replace(search="gumbel", max_num_considered_actions=4), params)
    first = engine.search()
    engine.position.play_action(first.best_action)  # Gumbel's choice was visited: its node is in the tree
    result = engine.search()
    assert engine.kept.inherited > 1  # the chosen move's subtree
    assert result.visits == VISITS and result.reused_visits == 0  # sequential halving's own visits, from zero
    tree = jax.device_get(engine.kept.tree)
    assert tree.node_visits.shape[1] == engine.max_visits + 1
    assert_valid_tree(tree, root_afresh=True)


def test_search_contempt_engines_search_afresh(params):
    assert not Engine(CONFIG, params, n_scl=2).reuses_trees
    engine = Engine(CONFIG, params)
    engine.set_tree_reuse(False)
    assert not engine.reuses_trees and engine.kept is None


def test_uci_lists_and_sets_the_tree_reuse_option(models):
    engine = Engine.from_checkpoint(str(models["chess"]))
    out = io.StringIO()
    UCIEngine(engine, io.StringIO("uci\nsetoption name TreeReuse value false\nquit\n"), out).run()
    assert "option name TreeReuse type check default true" in out.getvalue().splitlines()
    assert not engine.tree_reuse


def test_uci_lists_and_sets_lc0s_two_fold_draws_option(models):
    engine = Engine.from_checkpoint(str(models["chess"]))
    engine.search()
    assert engine.kept is not None and not engine.spec().twofold_draws
    out = io.StringIO()
    UCIEngine(engine, io.StringIO("uci\nsetoption name TwoFoldDraws value true\nquit\n"), out).run()
    assert "option name TwoFoldDraws type check default false" in out.getvalue().splitlines()
    assert engine.spec().twofold_draws and engine.kept is None  # the next search starts afresh under the rule
