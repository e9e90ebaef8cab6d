"""Odds starts: with probability p a chess game begins a queen, rook, bishop or knight short for one side; the
other starts are the wrapped seam's own, bit for bit, and off is no wrapper at all."""

from __future__ import annotations

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.games import make_game
from azjax.methods.alphazero import NewGames
from azjax.methods.odds_starts import OddsStarts, odds_fens

GAME = make_game("chess")
VALUES = {chess.QUEEN: 9, chess.ROOK: 5, chess.BISHOP: 3, chess.KNIGHT: 3}


def _material(board: chess.Board, colour: bool) -> int:
    return sum(VALUES.get(p.piece_type, 0) for p in board.piece_map().values() if p.color == colour)


def test_the_odds_starts_are_the_standard_position_less_one_piece_of_either_side() -> None:
    fens = odds_fens()
    assert len(fens) == len(set(fens)) == 14
    standard = chess.Board()
    lacking = {chess.WHITE: [], chess.BLACK: []}
    for fen in fens:
        board = chess.Board(fen)
        assert board.is_valid() and board.turn == chess.WHITE
        assert len(board.piece_map()) == 31
        for colour in (chess.WHITE, chess.BLACK):
            missing = _material(standard, colour) - _material(board, colour)
            if missing:
                lacking[colour].append(missing)
        # A removed rook's castling right goes with it; the others stay.
        assert board.castling_rights == board.clean_castling_rights()
    assert sorted(lacking[chess.WHITE]) == sorted(lacking[chess.BLACK]) == [3, 3, 3, 3, 5, 5, 9]


@pytest.mark.slow  # compiles chess's batched init (about 35 s on 2 cores)
def test_a_share_p_of_the_starts_is_at_odds_and_the_rest_are_the_wrapped_seams() -> None:
    n = 512
    states = jax.vmap(GAME.init)(jax.random.split(jax.random.key(0), n))
    ended = jnp.arange(n) % 2 == 0
    inner = NewGames(GAME)
    seam = OddsStarts(inner=inner, game=GAME, odds_start_prob=0.25)
    games, _, _, stats = jax.jit(seam.restart)(jax.random.key(5), None, None, states, None, None, None, ended)
    plain, *_ = inner.restart(jax.random.key(5), None, None, states, None, None, None, ended)
    boards = np.asarray(games.env._x.board)  # [n, 64] pgx piece codes, 0 = empty
    at_odds = (boards != 0).sum(-1) == 31
    assert 0.18 < at_odds.mean() < 0.32, at_odds.mean()
    odds_boards = {np.asarray(GAME.start_position(fen=f).env._x.board).tobytes() for f in odds_fens()}
    drawn = {b.tobytes() for b in boards[at_odds]}
    assert drawn <= odds_boards and len(drawn) > 10  # odds starts only, and most of the 14 of them
    for x, y in zip(jax.tree.leaves(games), jax.tree.leaves(plain), strict=True):
        assert np.asarray(x)[~at_odds].tobytes() == np.asarray(y)[~at_odds].tobytes()
    assert int(stats["odds_starts_sum"]) == (at_odds & np.asarray(ended)).sum()  # counted where a game began
    assert seam.columns == ("odds_share",)
    assert seam.row({"games": 8, "odds_starts_sum": 2}) == {"odds_share": 0.25}


def test_odds_starts_are_chess_only() -> None:
    with pytest.raises(ValueError, match="chess only"):
        OddsStarts(inner=NewGames(make_game("connect_four")), game=make_game("connect_four"), odds_start_prob=0.5)


def test_the_build_wraps_the_starts_only_when_switched_on_and_openings_follow_the_odds() -> None:
    from azjax.build import game_starts, make_network
    from azjax.config import preset
    from azjax.methods.random_openings import RandomOpenings

    off = preset("chess", "quick", num_blocks=1, num_channels=8)
    net = make_network(off, GAME)
    assert isinstance(game_starts(off, GAME, net), NewGames)  # p = 0: AlphaZero's starts, no wrapper
    on = game_starts(off.replace(odds_start_prob=0.1, random_opening_plies=4), GAME, net)
    assert isinstance(on, RandomOpenings) and isinstance(on.inner, OddsStarts)
    assert on.inner.odds_start_prob == 0.1 and isinstance(on.inner.inner, NewGames)


@pytest.mark.parametrize(("fields", "message"), [
    ({"game": "go_9x9", "odds_start_prob": 0.1}, "applies to chess only"),
    ({"game": "chess", "odds_start_prob": 1.5}, r"odds_start_prob must be in \[0, 1\]"),
])
def test_a_bad_odds_setting_is_refused_naming_the_field(fields, message) -> None:
    from azjax.config import Config

    with pytest.raises(ValueError, match=message):
        Config(**fields)
