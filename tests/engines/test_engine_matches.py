"""lab/engines/engine_matches.py: azjax against Stockfish and GNU Go through UCI and GTP under a clock.

A two-game match of the untrained models against each, at toy settings (4 visits, a 20+0.5 s clock, games cut at
12 plies), and the Elo arithmetic on games whose answer is known.
"""

from __future__ import annotations

import json
from importlib import import_module

import chess
import pytest
from outside_programs import outside_program

matches = import_module("lab.engines.engine_matches")


def test_an_even_score_against_an_anchor_is_the_anchor_s_elo_within_a_symmetric_interval():
    even = matches.anchored_elo([(1500, 1.0), (1500, 0.0), (1500, 0.5), (1500, 0.5)])
    assert even["elo"] == 1500 and even["games"] == 4
    low, high = even["interval"]
    assert low < 1500 < high and abs((1500 - low) - (high - 1500)) <= 1
    better = matches.anchored_elo([(1500, 1.0), (1500, 1.0), (1500, 1.0), (1500, 0.0)])
    assert better["elo"] == pytest.approx(1500 + 400 * 0.4771, abs=1)  # score 0.75: 400 log10(3)
    assert matches.anchored_elo([]) is None


def test_a_row_says_how_much_of_its_clock_azjax_used():
    # 30 s + 1 s a move: moving first in a 21-ply game azjax made 11 moves, a budget of 41 s; second, 10 and 40 s.
    first = matches.GameResult(1.0, True, "checkmate", 21, 20.5, [])
    second = matches.GameResult(0.0, False, "checkmate", 21, 10.0, [])
    row = matches.score_row([first, second], (30.0, 1.0))
    assert row["clock_used"] == pytest.approx((20.5 / 41 + 10 / 40) / 2, abs=1e-4)
    assert (row["wins"], row["losses"], row["score"]) == (1, 1, 0.5)


def test_a_clock_runs_out_only_past_its_time_and_adds_the_increment_after_each_move():
    clock = matches.Clock(2.0, 0.5)
    assert clock.spend("w", 1.5) and clock.left == {"w": 1.0, "b": 2.0}
    assert not clock.spend("w", 1.25)
    assert matches.parse_clock("60+1") == (60.0, 1.0) and matches.parse_clock("30") == (30.0, 0.0)


@pytest.mark.slow
def test_two_game_matches_against_stockfish_and_gnu_go_give_scores_and_elo_intervals(models, tmp_path):
    stockfish, gnugo = outside_program("stockfish"), outside_program("gnugo")
    out = tmp_path / "matches.json"
    assert matches.main(["--chess", str(models["chess"]), "--go", str(models["go_9x9"]), "--stockfish_elo", "1350",
                         "--stockfish_skill", "--gnugo_levels", "1", "--games", "2", "--clock", "20+0.5", "--visits",
                         "4", "--max_plies", "12", "--stockfish", stockfish, "--gnugo", gnugo, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["command"].startswith("python -m lab.engines.engine_matches --chess")
    assert result["clock"] == {"base_s": 20.0, "increment_s": 0.5}
    rows = {row["opponent"]: row for row in result["rows"]}
    assert set(rows) == {"stockfish", "gnugo"} and rows["stockfish"]["setting"] == "UCI_Elo"
    for row in rows.values():
        games = row["games_played"]
        assert row["games"] == len(games) == 2 and row["wins"] + row["draws"] + row["losses"] == 2
        assert [g["azjax_first"] for g in games] == [True, False]  # colours alternate
        assert all(0 < g["plies"] <= 12 and g["reason"] and not g["reason"].startswith(("failed", "illegal"))
                   for g in games)
        low, high = row["score_interval"]
        assert low <= row["score"] <= high
        low, high = row["elo_diff_interval"]
        assert low <= row["elo_diff"] <= high
        assert 0 < row["clock_used"] < 1
    for g in rows["stockfish"]["games_played"]:  # the moves the referee recorded replay legally
        board = chess.Board()
        for move in g["moves"]:
            board.push_uci(move)
    anchored = result["chess_elo_anchored_on_stockfish_uci_elo"]
    assert anchored["games"] == 2 and anchored["interval"][0] <= anchored["elo"] <= anchored["interval"][1]
