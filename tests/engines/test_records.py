"""Game records: SGF (sgfmill), PGN (python-chess), the Connect Four text format, result tags, and collections of
many games in one file."""

from __future__ import annotations

import io
import types

import chess
import chess.pgn
import pytest
from sgfmill import sgf

from azjax.engines.records import (
    ARENA_GAME_ID,
    arena_game_id,
    chess_pgn,
    collection_path,
    connect_four_record,
    game_record,
    go_sgf,
    point_to_vertex,
    read_chess_pgn,
    read_collection,
    read_connect_four_record,
    read_go_sgf,
    result_string,
    vertex_to_point,
    write_collection,
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
    text = game_record(GAMES["chess"], ["e7e5"], first="A", second="B", result="0-1", start_fen=fen)
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


def test_each_game_writes_its_record_in_its_format_and_an_unknown_format_has_no_writer():
    go = game_record(GAMES["go_7x7"], ["D4", "pass", "pass"], first="a", second="b", result="B+9.5", komi=9.5)
    assert isinstance(go, bytes) and sgf.Sgf_game.from_bytes(go).get_size() == 7
    assert chess.pgn.read_game(io.StringIO(game_record(GAMES["chess"], ["e2e4"], first="a", second="b",
                                                        result="*"))) is not None
    c4 = game_record(GAMES["connect_four"], ["1"], first="a", second="b", result="*")
    assert read_connect_four_record(c4)["moves"] == ["1"]
    othello = types.SimpleNamespace(name="othello", record_format="ggf")
    with pytest.raises(ValueError, match="no writer for 'othello'"):
        game_record(othello, [], first="a", second="b", result="*")
    with pytest.raises(ValueError, match="no writer for 'othello'"):
        collection_path("out", othello)


def test_an_arena_game_id_names_the_pairing_both_agents_and_the_game_number():
    game_id = arena_game_id(3, "go_9x9:512:sensible_lambda=0.5", "gnugo-l1", 7)
    assert game_id == "03_go_9x9_512_sensible_lambda_0.5_vs_gnugo-l1_0007"
    assert ARENA_GAME_ID.fullmatch(game_id).groups() == ("03", "go_9x9_512_sensible_lambda_0.5", "gnugo-l1", "0007")


# Three games of each format: moves, players, results and (chess) a FEN start differ from game to game.
GAMES_TO_COLLECT = {
    "go_9x9": [(["D4", "E5", "pass", "pass"], "B+3.5"), (["J9", "A1", "C3"], "W+R"), ([], "Void")],
    "chess": [(["e2e4", "e7e5", "g1f3"], "*"), (["f2f3", "e7e5", "g2g4", "d8h4"], "0-1"), (["e7e5"], "1-0")],
    "connect_four": [(["4", "4", "3"], "*"), (["1", "2", "1", "2", "1", "2", "1"], "1-0"), ([], "*")],
}
BLACK_TO_MOVE = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"


@pytest.mark.parametrize("name", sorted(GAMES_TO_COLLECT))
def test_a_collection_gives_back_every_game_its_id_and_its_own_record_in_order(name, tmp_path):
    game = GAMES[name]
    records = []
    for k, (moves, result) in enumerate(GAMES_TO_COLLECT[name]):
        first, second = (f"agent {k}", "other") if k % 2 == 0 else ("other", f"agent {k}")
        fen = BLACK_TO_MOVE if name == "chess" and k == 2 else None
        records.append(game_record(game, moves, first=first, second=second, result=result, komi=7.5, start_fen=fen,
                                   termination=f"game {k}", game_id=arena_game_id(0, "agent", "other", k)))
    path = write_collection(collection_path(tmp_path / "arena", game), records)
    assert path == tmp_path / "arena" / {"go_9x9": "games.sgf", "chess": "games.pgn", "connect_four": "games.txt"}[name]
    back = read_collection(path)
    assert [g["id"] for g in back] == ["00_agent_vs_other_0000", "00_agent_vs_other_0001", "00_agent_vs_other_0002"]
    assert [g["moves"] for g in back] == [moves for moves, _ in GAMES_TO_COLLECT[name]]
    assert [g["result"] for g in back] == [result for _, result in GAMES_TO_COLLECT[name]]
    assert [g["record"] for g in back] == records  # each game's own record, byte for byte
    if name == "chess":
        assert back[2]["fen"] == BLACK_TO_MOVE and back[2]["black"] == "agent 2"
    if name == "go_9x9":
        assert back[1]["black"] == "other" and back[1]["komi"] == 7.5


def test_a_corrupt_collection_is_refused_in_one_line_naming_the_file_and_the_problem(tmp_path):
    c4 = [connect_four_record(["4"], game_id=f"00_a_vs_b_000{k}") for k in range(2)]
    sgf_games = [go_sgf(["D4"], size=9, komi=7.5, game_id=f"00_a_vs_b_000{k}").decode() for k in range(2)]
    pgn_games = [chess_pgn(["e2e4"], game_id=f"00_a_vs_b_000{k}") for k in range(2)]
    cases = {
        "games.txt": [("Moves: 4\n", "the first line is not '# azjax game record'"),
                      (c4[0] + "\n" + c4[1].replace("Moves: 4", "Moves: 4 9"), "game 2: not Connect Four columns"),
                      (c4[0] + "\n" + c4[0], "game id '00_a_vs_b_0000' appears twice"),
                      (connect_four_record(["4"]), "game 1 has no id"),
                      ("", "holds no game")],
        "games.sgf": [(sgf_games[0] + sgf_games[1][:-5], "error parsing game 1"),
                      (sgf_games[0] + go_sgf(["D4"], size=9, komi=7.5).decode(), "game 2 has no id"),
                      ("\n", "holds no game")],
        "games.pgn": [(pgn_games[0] + "\n" + pgn_games[1].replace("1. e4", "1. e5"), "game 2: illegal san"),
                      (pgn_games[1] + "\n" + pgn_games[1], "game id '00_a_vs_b_0001' appears twice"),
                      ("", "holds no game")],
        "games.json": [("{}", "not a game collection")],
    }
    for name, texts in cases.items():
        for text, problem in texts:
            path = tmp_path / name
            path.write_text(text)
            with pytest.raises(ValueError) as refused:
                read_collection(path)
            message = str(refused.value)
            assert message.startswith(f"{path}: ") and problem in message and "\n" not in message, message
