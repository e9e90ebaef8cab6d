"""Certainty propagation (azjax/search/certainty.py): proven wins, losses and draws backed up the tree, and a root
that plays a proven win and never a proven loss while it has another move."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import chess
import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax.build import search_spec
from azjax.config import Config
from azjax.games import Game, GameState, make_game
from azjax.games.chess import Chess
from azjax.search import SearchSpec, choose_move, run_search
from azjax.search.certainty import CertaintyData, child_bounds

# Connect Four, columns 1-7; the first player is X.
WIN = "1 7 2 7 3 6"  # X to move has 1-2-3 on the bottom row: column 4 wins
BLOCK = "7 1 7 2 6 3"  # O has 1-2-3: X must play column 4 or lose at once
COLUMN_4 = 3


def stubborn_evaluator(params: dict[str, jax.Array], states: GameState) -> tuple[jax.Array, jax.Array]:
    """A network that hates column 4 and thinks every position even."""
    logits = jnp.broadcast_to(params["logits"], states.legal_action_mask.shape)
    return logits, jnp.zeros(states.legal_action_mask.shape[:-1])


@pytest.fixture(scope="module")
def c4() -> Game:
    return make_game("connect_four")


@pytest.fixture(scope="module")
def search() -> Callable[..., mctx.PolicyOutput]:
    return jax.jit(run_search, static_argnums=(0, 1, 2))


def _stack(states: list[GameState]) -> GameState:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def _position(game: Game, moves: str) -> GameState:
    state = game.init(jax.random.PRNGKey(0))
    for text in moves.split():
        state = game.step(state, game.parse_action(state, text))
    return state


@pytest.fixture(scope="module")
def roots(c4: Game) -> GameState:
    return _stack([_position(c4, WIN), _position(c4, BLOCK)])


PARAMS = {"logits": jnp.zeros(7).at[COLUMN_4].set(-30.0)}


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_a_search_that_scans_expanded_nodes_plays_the_win_and_the_block_its_network_never_would(
        c4: Game, roots: GameState, search: Callable[..., mctx.PolicyOutput], kind: str) -> None:
    plain = SearchSpec(kind=kind, num_simulations=16, max_num_considered_actions=7, gumbel_scale=0.0,
                       dirichlet_fraction=0.0)
    certain = dataclasses.replace(plain, certainty="expanded")
    out = search(plain, c4, stubborn_evaluator, PARAMS, jax.random.PRNGKey(0), roots)
    assert (np.asarray(choose_move(plain, jax.random.PRNGKey(1), out, jnp.zeros(2, bool))) != COLUMN_4).all()
    out = search(certain, c4, stubborn_evaluator, PARAMS, jax.random.PRNGKey(0), roots)
    np.testing.assert_array_equal(choose_move(certain, jax.random.PRNGKey(1), out, jnp.zeros(2, bool)), [COLUMN_4] * 2)
    # The root that can win is a proven win from the start; the other root's moves but one are proven losses.
    data: CertaintyData = out.search_tree.extra_data
    assert float(data.lower[0, 0]) == 1.0 and float(out.search_tree.node_values[0, 0]) == 1.0
    np.testing.assert_array_equal(out.action_weights[0], np.eye(7)[COLUMN_4])
    children = child_bounds(out.search_tree, jnp.zeros(2, jnp.int32))
    visited = np.asarray(out.search_tree.children_visits[1, 0]) > 0
    assert visited.sum() >= 5
    np.testing.assert_array_equal(np.asarray(children.upper[1])[visited & (np.arange(7) != COLUMN_4)], -1.0)
    assert float(out.action_weights[1, COLUMN_4]) == pytest.approx(1.0)


def test_without_the_scan_a_finished_game_is_known_once_the_search_reaches_it(
        c4: Game, roots: GameState, search: Callable[..., mctx.PolicyOutput]) -> None:
    # Gumbel considers all 7 root moves, so the win is visited, and once visited it is played and it alone targeted,
    # where the network's prior outweighs sigma(q) at c_scale 0.1 without certainty.
    root = jax.tree.map(lambda x: x[:1], roots)
    spec = SearchSpec(kind="gumbel", num_simulations=16, max_num_considered_actions=7, gumbel_scale=0.0,
                      certainty="visited")
    out = search(spec, c4, stubborn_evaluator, PARAMS, jax.random.PRNGKey(0), root)
    plain = search(dataclasses.replace(spec, certainty="off"), c4, stubborn_evaluator, PARAMS, jax.random.PRNGKey(0),
                   root)
    assert int(plain.action[0]) != COLUMN_4 and int(out.action[0]) == COLUMN_4
    assert out.search_tree.extra_data.ended is None
    assert int(out.search_tree.children_visits[0, 0, COLUMN_4]) > 0
    np.testing.assert_array_equal(out.action_weights[0], np.eye(7)[COLUMN_4])


def test_a_root_whose_every_move_loses_is_a_proven_loss_and_still_plays_a_legal_move(
        c4: Game, search: Callable[..., mctx.PolicyOutput]) -> None:
    root = _stack([_position(c4, "7 2 7 3 6 4")])  # O has b1 c1 d1 open at both ends: X can stop one win, not two
    spec = SearchSpec(kind="puct", num_simulations=32, dirichlet_fraction=0.0, certainty="expanded")
    out = search(spec, c4, stubborn_evaluator, {"logits": jnp.zeros(7)}, jax.random.PRNGKey(0), root)
    data: CertaintyData = out.search_tree.extra_data
    assert float(data.upper[0, 0]) == -1.0 and float(out.search_tree.node_values[0, 0]) == -1.0
    assert float(np.asarray(out.action_weights).sum()) == pytest.approx(1.0)
    assert bool(root.legal_action_mask[0, int(choose_move(spec, jax.random.PRNGKey(1), out, jnp.zeros(1, bool))[0])])


def _chess_evaluator(params: dict[str, jax.Array], states: GameState) -> tuple[jax.Array, jax.Array]:
    return jnp.broadcast_to(params["logits"], states.legal_action_mask.shape), jnp.zeros(states.terminated.shape)


@pytest.mark.slow
@pytest.mark.parametrize("side, favourite, kind", [("w", "a1b1", "gumbel"), ("b", "g8h8", "puct")])
def test_in_chess_a_mate_in_one_is_played_and_a_move_that_allows_one_is_not(side: str, favourite: str,
                                                                            kind: str) -> None:
    game = make_game("chess")
    assert isinstance(game, Chess)
    # White mates with Ra8; Black to move walks into it with Kh8 alone (its other moves make room for the king).
    fen = f"6k1/5ppp/8/8/8/8/8/R5K1 {side} - - 0 1"
    state = game.start_position(fen=fen)
    logits = jnp.zeros(game.num_actions).at[game.parse_action(state, favourite)].set(30.0)
    spec = SearchSpec(kind=kind, num_simulations=12, max_num_considered_actions=16, gumbel_scale=0.0,
                      dirichlet_fraction=0.0)
    run = jax.jit(run_search, static_argnums=(0, 1, 2))
    plain = run(spec, game, _chess_evaluator, {"logits": logits}, jax.random.PRNGKey(0), _stack([state]))
    played = game.action_to_str(state, int(choose_move(spec, jax.random.PRNGKey(1), plain, jnp.zeros(1, bool))[0]))
    assert played == favourite
    certain = dataclasses.replace(spec, certainty="expanded")
    out = run(certain, game, _chess_evaluator, {"logits": logits}, jax.random.PRNGKey(0), _stack([state]))
    played = game.action_to_str(state, int(choose_move(certain, jax.random.PRNGKey(1), out, jnp.zeros(1, bool))[0]))
    board = chess.Board(fen)
    board.push_uci(played)
    if side == "w":
        assert board.is_checkmate()
    else:
        assert played != favourite
        for reply in list(board.legal_moves):
            board.push(reply)
            assert not board.is_checkmate(), (played, reply)
            board.pop()


def test_config_switches_certainty_for_self_play_and_the_player_apart() -> None:
    config = Config(game="connect_four", certainty_propagation="visited", eval_certainty_propagation="expanded")
    assert search_spec(config, training=True).certainty == "visited"
    assert search_spec(config, training=False).certainty == "expanded"
    assert search_spec(Config(game="connect_four", certainty_propagation="visited"), training=False).certainty == \
        "visited"
    assert search_spec(Config(game="connect_four"), training=True).certainty == "off"
    with pytest.raises(ValueError, match="certainty_propagation"):
        Config(game="connect_four", certainty_propagation="on")
    with pytest.raises(ValueError, match="n_scl"):
        Config(game="connect_four", certainty_propagation="visited", n_scl=4)


def test_an_engine_whose_config_scans_for_the_player_takes_a_win_its_untrained_network_misses(
        c4_quick_untrained) -> None:  # noqa: ANN001
    from azjax.engines.engine import Engine

    def best(overrides: dict) -> str:
        engine = Engine.from_checkpoint(str(c4_quick_untrained), config_overrides=overrides, visits=2)
        engine.position.set_position(BLOCK.split() + ["1"])  # X blocked nothing: O to move wins with column 4
        return engine.genmove()[0]

    assert best({"eval_certainty_propagation": "expanded"}) == "4"
    assert best({}) != "4"


def test_a_self_play_loop_with_certainty_trains_on_other_games_than_alphazeros(tiny_overrides: dict) -> None:
    from azjax.train.loop import Trainer

    tiny = {**tiny_overrides, "moves_per_step": 16, "replay_size": 256}
    runs = {}
    for certainty in ("off", "visited"):
        trainer = Trainer(Config(game="connect_four", **tiny, certainty_propagation=certainty))
        assert trainer.spec.certainty == certainty
        state, rows = trainer.init(0), []
        for _ in range(3):
            state, metrics = trainer.step(state)
            rows.append({k: float(v) for k, v in metrics.items()})
        runs[certainty] = rows
    assert all(np.isfinite(r["loss"]) for r in runs["visited"] if r["sgd_applied"])
    assert any(r["sgd_applied"] for r in runs["visited"])
    assert [r["root_value"] for r in runs["off"]] != [r["root_value"] for r in runs["visited"]]
