"""SGF in and out of a Go position (loadsgf / printsgf): setup stones, moves up to a move number, refusals that
leave the position as it was, and a written game that reads back the same."""

from __future__ import annotations

import numpy as np
import pytest
from sgfmill import sgf

from azjax.engines.position import Position
from azjax.engines.sgf_io import load_sgf, position_sgf, read_sgf
from azjax.games import make_game

HANDICAP_GAME = b"(;GM[1]FF[4]SZ[9]KM[0.5]HA[2]AB[cc][gg];W[ee];B[dd];W[ff])"


@pytest.fixture(scope="module")
def pos() -> Position:
    return Position(make_game("go_9x9"))


def test_an_sgf_loads_its_komi_handicap_stones_and_moves_up_to_the_move_number(pos):
    record = read_sgf(HANDICAP_GAME)
    assert record.size == 9 and record.komi == 0.5 and record.black == ("C7", "G3") and record.white == ()
    assert record.moves == (("w", "E5"), ("b", "D6"), ("w", "F4"))
    load_sgf(pos, record)
    assert pos.komi == 0.5 and pos.setup_stones() == (["C7", "G3"], [])
    assert pos.game_moves() == [("w", "E5"), ("b", "D6"), ("w", "F4")] and pos.to_move() == "b"
    load_sgf(pos, record, move_number=2)  # the position before move 2
    assert pos.game_moves() == [("w", "E5")] and pos.to_move() == "b"
    load_sgf(pos, record, move_number=1)
    assert pos.game_moves() == [] and pos.to_move() == "w"
    load_sgf(pos, read_sgf(b"(;SZ[9];B[ee])"))  # no KM: the komi stays
    assert pos.komi == 0.5 and pos.moves == ["E5"]


def test_a_colour_moving_twice_gets_a_pass_between_unless_that_pass_ends_the_game(pos):
    load_sgf(pos, read_sgf(b"(;SZ[9]KM[7];B[ee];B[dd])"))
    assert pos.moves == ["E5", "pass", "D6"] and pos.komi == 7.0
    with pytest.raises(ValueError, match=r"move 2 \(b D6\) follows a pass of its colour"):
        load_sgf(pos, read_sgf(b"(;SZ[9];B[];B[dd])"))
    assert pos.moves == ["E5", "pass", "D6"] and pos.komi == 7.0


@pytest.mark.parametrize("data, message", [
    (b"(;SZ[19];B[dd])", "the SGF's board is 19x19"),
    (b"(;SZ[9]AE[aa];B[dd])", "AE"),
    (b"(;SZ[9];B[dd];AB[ee])", "after the first node"),
    (b"(;SZ[9];B[dd];W[dd])", r"move 2 \(w D6\): illegal"),
    (b"(;GM[2]SZ[9])", "not a Go game"),
    (b"no sgf here", "bad SGF"),
    (b"(;SZ[9]KM[x])", "bad SGF"),
])
def test_a_refused_sgf_leaves_the_position_as_it_was(pos, data, message):
    pos.set_position(["E5", "D6"], komi=3.5)
    with pytest.raises(ValueError, match=message):
        load_sgf(pos, read_sgf(data))
    assert pos.moves == ["E5", "D6"] and pos.komi == 3.5 and pos.setup == 0


def test_the_written_game_reads_back_with_its_setup_moves_and_result(pos):
    pos.reset(komi=0.5)
    pos.place_stones(["C3", "G7"])
    for move in ("E5", "D4", "pass", "pass"):
        pos.play(move)
    data = position_sgf(pos, date="2026-01-01")
    root = sgf.Sgf_game.from_bytes(data).get_root()
    assert root.get("HA") == 2 and root.get("PL") == "w" and root.get("RU") == "Tromp-Taylor"
    assert root.get("KM") == 0.5 and root.get("RE").startswith("B+") and root.get("DT") == "2026-01-01"
    board, moves = pos.game.board(pos.state), pos.game_moves()
    assert moves == [("w", "E5"), ("b", "D4"), ("w", "pass"), ("b", "pass")]
    load_sgf(pos, read_sgf(data))
    assert pos.game_moves() == moves and pos.setup_stones() == (["G7", "C3"], []) and pos.is_over
    np.testing.assert_array_equal(pos.game.board(pos.state), board)
    pos.reset()
    pos.play("E5")
    assert b"HA[" not in position_sgf(pos) and b"RE[" not in position_sgf(pos) and b"PL[" not in position_sgf(pos)
