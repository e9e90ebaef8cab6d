"""Game records: SGF (sgfmill), PGN (python-chess), the Connect Four text format, result tags."""

from __future__ import annotations

import io
import types

import chess
import chess.pgn
import pytest
from sgfmill import sgf

from azjax.engines.records import (
    chess_pgn,
    connect_four_record,
    game_record,
    go_sgf,
    point_to_vertex,
    read_chess_pgn,
    read_connect_four_record,
    read_go_sgf,
    result_string,
    vertex_to_point,
    write_record,
)
from azjax.games import make_game

GAMES = {name: make_game(name) for name in ("connect_four", "go_7x7", "go_9x9", "chess")}


def test_go_sgf_round_trip_in_sgfmill():
    moves = ["D4", "E5", "J9", "A1", "pass", "C3", "pass", "pass"]
    data = go_sgf(moves, size=9, komi=7.5, black="net", white="gnugo", result="B+3.5", comment="test")
    game = sgf.Sgf_game.from_bytes(data)
    assert game.get_size() == 9 and game.get_komi() == 7.5
    assert game.get_player_name("b") == "net" and game.get_player_name("w") == "gnugo"
    assert game.get_root().get("RE") == "B+3.5"
    played = [n.get_move() for n in game.get_main_sequence()[1:]]
    assert played[0] == ("b", (3, 3)) and played[1] == ("w", (4, 4))
    assert played[2] == ("b", (8, 8)) and played[3] == ("w", (0, 0))
    assert played[4] == ("b", None)
    back = read_go_sgf(data)
    assert back["moves"] == ["D4", "E5", "J9", "A1", "pass", "C3", "pass", "pass"]
    assert back["result"] == "B+3.5" and back["komi"] == 7.5


def test_go_vertices():
    assert vertex_to_point("j9", 9) == (8, 8) and point_to_vertex((8, 8)) == "J9"
    assert vertex_to_point("PASS", 9) is None and point_to_vertex(None) == "pass"
    with pytest.raises(ValueError):
        vertex_to_point("H8", 7)


def test_chess_pgn_round_trip_and_legality():
    moves = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]
    text = chess_pgn(moves, white="net", black="sf", result="*", round_="3", termination="adjudicated")
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and not game.errors
    assert [m.uci() for m in game.mainline_moves()] == moves
    assert game.headers["White"] == "net" and game.headers["Termination"] == "adjudicated"
    assert read_chess_pgn(text)["moves"] == moves
    with pytest.raises(ValueError, match="illegal move"):
        chess_pgn(["e2e5"])
    # a FEN start (Black to move): SetUp/FEN headers, and the first mover is Black
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    text, suffix = game_record(GAMES["chess"], ["e7e5"], first="A", second="B", result="0-1", start_fen=fen)
    assert suffix == ".pgn"
    back = read_chess_pgn(text)
    assert back["fen"] == fen and back["black"] == "A" and back["white"] == "B" and back["moves"] == ["e7e5"]
    assert chess.pgn.read_game(io.StringIO(text)).headers["FEN"] == fen


def test_connect_four_record():
    text = connect_four_record(["4", "4", "3"], first="a", second="b", result="1-0", comment="opening: 4")
    back = read_connect_four_record(text)
    assert back["moves"] == ["4", "4", "3"] and back["first"] == "a" and back["result"] == "1-0"
    with pytest.raises(ValueError):
        read_connect_four_record("Moves: 4 9\n")


def test_result_strings():
    assert result_string(GAMES["go_9x9"], 1.0, go_black_minus_komi=3.5) == "B+3.5"
    assert result_string(GAMES["go_9x9"], -1.0, go_black_minus_komi=-0.5) == "W+0.5"
    assert result_string(GAMES["go_9x9"], -1.0, reason="resign") == "W+R"
    assert result_string(GAMES["go_7x7"], 1.0, reason="forfeit") == "B+F"
    assert result_string(GAMES["go_9x9"], None) == "Void"
    assert result_string(GAMES["chess"], 1.0) == "1-0" and result_string(GAMES["chess"], -1.0) == "0-1"
    assert result_string(GAMES["chess"], 0.0) == "1/2-1/2" and result_string(GAMES["connect_four"], None) == "*"


def test_write_record_suffixes(tmp_path):
    p = write_record(tmp_path / "g" / "go", GAMES["go_7x7"], ["D4", "pass", "pass"], first="a", second="b",
                     result="B+9.5", komi=9.5)
    assert p.suffix == ".sgf" and sgf.Sgf_game.from_bytes(p.read_bytes()).get_size() == 7
    p = write_record(tmp_path / "c", GAMES["chess"], ["e2e4"], first="a", second="b", result="*")
    assert p.suffix == ".pgn" and chess.pgn.read_game(open(p)) is not None
    p = write_record(tmp_path / "c4", GAMES["connect_four"], ["1"], first="a", second="b", result="*")
    assert p.suffix == ".txt" and read_connect_four_record(p.read_text())["moves"] == ["1"]
    othello = types.SimpleNamespace(name="othello", record_format="ggf")
    with pytest.raises(ValueError, match="no writer for 'othello'"):
        game_record(othello, [], first="a", second="b", result="*")
