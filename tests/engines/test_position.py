"""Position: Go's setup stones (handicap, SGF AB/AW) placed as the first actions, Black stones with White passes
between."""

from __future__ import annotations

import numpy as np
import pytest

from azjax.engines.position import Position
from azjax.games import make_game


@pytest.fixture(scope="module")
def go9() -> Position:
    return Position(make_game("go_9x9"))


def stones(pos: Position) -> dict[str, set[tuple[int, int]]]:
    board = pos.game.board(pos.state)
    return {"b": set(zip(*np.nonzero(board == 1), strict=True)), "w": set(zip(*np.nonzero(board == -1), strict=True))}


def test_handicap_stones_go_down_as_black_moves_with_white_passes_and_leave_white_to_move(go9):
    pos = go9
    pos.reset(komi=0.5)
    pos.place_stones(["C3", "G7", "C7"])
    assert pos.moves == ["C3", "pass", "G7", "pass", "C7"] and pos.setup == 5
    assert pos.to_move() == "w" and not pos.is_over
    assert stones(pos) == {"b": {(6, 2), (2, 6), (2, 2)}, "w": set()}
    assert pos.setup_stones() == (["C3", "G7", "C7"], []) and pos.game_moves() == []
    # A pass now does not end the game (the last setup action is a stone), and the game goes on from there.
    pos.play("pass")
    assert not pos.is_over and pos.to_move() == "b"
    pos.play("E5")
    assert pos.game_moves() == [("w", "pass"), ("b", "E5")]
    # undo stops at the setup; a new komi keeps it
    pos.undo()
    pos.undo()
    with pytest.raises(ValueError, match="cannot undo the setup stones"):
        pos.undo()
    pos.set_komi(7.5)
    assert pos.setup == 5 and pos.komi == 7.5 and pos.setup_stones() == (["C3", "G7", "C7"], [])
    pos.reset()
    assert pos.setup == 0 and pos.actions == []


def test_setup_stones_of_both_colours_alternate_and_a_pass_sets_the_side_to_move(go9):
    pos = go9
    pos.reset()
    pos.place_stones(["A1"], ["B1", "C1"], to_move="w")
    # White has one more stone: Black passes between White's two, then passes again so that White is to move
    assert pos.moves == ["A1", "B1", "pass", "C1", "pass"] and pos.to_move() == "w" and not pos.is_over
    assert pos.setup_stones() == (["A1"], ["B1", "C1"])
    assert not np.any(pos.game.board(pos.state)[8, :3] == 0)  # A1 has a liberty left at A2: nothing captured
    pos.reset()
    pos.place_stones([], [], to_move="w")  # only a side to move: Black passes
    assert pos.moves == ["pass"] and pos.to_move() == "w" and pos.setup == 1


def test_setup_refuses_a_used_board_bad_or_repeated_vertices_and_stones_that_capture(go9):
    pos = go9
    pos.reset()
    with pytest.raises(ValueError, match="repeated vertex C3"):
        pos.place_stones(["C3", "c3"])
    with pytest.raises(ValueError, match="not a Go vertex"):
        pos.place_stones(["C3", "Z9"])
    with pytest.raises(ValueError, match="a pass is not a stone"):
        pos.place_stones(["pass", "C3"])
    # White's A1 has no liberty among these stones: placed one by one, Black's B1 would capture it
    with pytest.raises(ValueError, match="cannot set up these stones"):
        pos.place_stones(["A2", "B1"], ["A1"])
    assert pos.actions == [] and pos.setup == 0
    pos.play("E5")
    with pytest.raises(ValueError, match="board not empty"):
        pos.place_stones(["C3", "G7"])
    pos.reset()
