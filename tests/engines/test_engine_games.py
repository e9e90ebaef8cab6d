"""`azjax arena` end to end on tiny untrained models: JAX agents in batches, `azjax gtp` as a
subprocess, and complete games against GNU Go (GTP) and Stockfish (UCI) when they are installed."""

from __future__ import annotations

import io
import json
import shutil
import sys

import chess
import chess.pgn
import pytest
from sgfmill import sgf

from azjax.cli import main
from azjax.engines.records import ARENA_GAME_ID, read_collection

VISITS = 4  # the eval_simulations of the untrained `models` (conftest.py)
GNUGO = shutil.which("gnugo") or shutil.which("gnugo", path="/usr/games")
STOCKFISH = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")


# ---------------------------------------------------------------- arena


@pytest.mark.slow
def test_arena_round_robin_jax_agents(models, tmp_path, capsys):
    c4 = str(models["connect_four"])
    openings = tmp_path / "openings.txt"
    openings.write_text("4\n3 3\n")
    out = tmp_path / "arena"
    assert main(["arena", f"{c4}:2", "random", f"policy:{c4}", "--games", "4", "--openings", str(openings),
                 "--out_dir", str(out), "--batch_size", "2"]) == 0
    text = capsys.readouterr().out
    assert "agent" in text and "95% CI" in text
    res = json.loads((out / "results.json").read_text())
    assert len(res["pairings"]) == 3 and all(p["games"] == 4 for p in res["pairings"])
    assert set(res["elo"]) == {"connect_four:2", "random", "connect_four:policy"}
    assert res["elo"]["connect_four:2"]["rating"] == 0.0
    for e in res["elo"].values():
        assert e["low"] <= e["rating"] <= e["high"]
    records = read_collection(out / "games.txt")
    assert len(records) == 12
    for i, rec in enumerate(records):
        opening = ["4"] if i % 2 == 0 else ["3", "3"]
        assert rec["moves"][: len(opening)] == opening  # openings cycle: game k uses opening k mod 2
        assert rec["result"] in ("1-0", "0-1", "1/2-1/2")
    # a gauntlet with random openings (the same compiled batches as above); then bad specs fail clearly
    assert main(["arena", f"{c4}:2", "random", f"policy:{c4}", "--games", "2", "--random_opening_plies", "3",
                 "--gauntlet", "--batch_size", "2", "--out_dir", str(tmp_path / "a2"), "--no_save"]) == 0
    res = json.loads((tmp_path / "a2" / "results.json").read_text())
    assert [(p["name_a"], p["name_b"]) for p in res["pairings"]] == [("connect_four:2", "random"),
                                                                     ("connect_four:2", "connect_four:policy")]
    assert not (tmp_path / "a2" / "games.txt").exists()
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:  # argparse's own refusal: one line, exit status 2
        main(["arena", "random", "mcts:2", "--game", "connect_four", "--games", "3"])
    assert refused.value.code == 2
    assert "argument --games: must be a positive even number" in capsys.readouterr().err
    assert main(["arena", "random", "uci:stockfish", "--game", "connect_four", "--games", "2"]) == 2
    assert "plays chess, not connect_four" in capsys.readouterr().err
    assert main(["arena", "random", "gtp:/nonexistent/engine", "--game", "go_9x9"]) == 2
    assert "engine program not found: '/nonexistent/engine'" in capsys.readouterr().err
    assert main(["arena", "random", "gtp:/bin/false", "--game", "go_9x9", "--games", "2", "--no_save",
                 "--out_dir", str(tmp_path / "a3")]) == 2
    assert "exited" in capsys.readouterr().err


@pytest.mark.slow
def test_arena_against_azjax_gtp_subprocess(models, tmp_path):
    """`azjax gtp` as a real subprocess (stdin/stdout) through the arena's GTP client, on Connect Four."""
    c4 = str(models["connect_four"])
    cmd = f"gtp:{sys.executable} -m azjax.cli gtp --checkpoint {c4} --visits 2"
    out = tmp_path / "arena"
    assert main(["arena", f"{c4}:2", f"sub={cmd}", "--games", "2", "--out_dir", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    p = res["pairings"][0]
    assert p["games"] == 2 and p["illegal"] == 0 and "sub" in res["elo"]
    # the same deterministic search on both sides: each side wins the game it starts, or both games mirror
    assert len(read_collection(out / "games.txt")) == 2


@pytest.mark.slow
@pytest.mark.skipif(GNUGO is None, reason="GNU Go is not installed (apt-get install gnugo)")
def test_game_against_gnugo(models, tmp_path):
    out = tmp_path / "arena"
    gnugo = f"gtp:{GNUGO} --mode gtp --level 1 --chinese-rules --capture-all-dead"
    assert main(["arena", f"{models['go_9x9']}:{VISITS}", f"gnugo={gnugo}", "--games", "2", "--max_plies", "100",
                 "--out_dir", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    p = res["pairings"][0]
    assert p["games"] == 2 and p["illegal"] == 0 and p["wins"] + p["losses"] == 2  # Go has no draws
    records = read_collection(out / "games.sgf")
    ids = [ARENA_GAME_ID.fullmatch(r["id"]).group(1, 3, 4) for r in records]  # pairing, agent B, game
    assert ids == [("00", "gnugo", "0000"), ("00", "gnugo", "0001")]
    for k, record in enumerate(records):
        game = sgf.Sgf_game.from_bytes(record["record"])
        assert game.get_size() == 9 and game.get_komi() == 7.5
        assert (game.get_player_name("b") == "gnugo") == (k == 1)  # colours alternate
        result = game.get_root().get("RE")
        assert result[:2] in ("B+", "W+")
        moves = [n.get_move() for n in game.get_main_sequence()[1:]]
        assert 0 < len(moves) <= 100 and moves[0][0] == "b"


@pytest.mark.slow
@pytest.mark.skipif(STOCKFISH is None, reason="Stockfish is not installed (apt-get install stockfish)")
def test_game_against_stockfish(models, tmp_path):
    out = tmp_path / "arena"
    assert main(["arena", f"{models['chess']}:{VISITS}", "sf=uci:stockfish:skill=0,movetime=10", "--games", "2",
                 "--max_plies", "60", "--out_dir", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    p = res["pairings"][0]
    assert p["games"] == 2 and p["illegal"] == 0
    records = read_collection(out / "games.pgn")
    assert len(records) == 2
    for k, record in enumerate(records):
        game = chess.pgn.read_game(io.StringIO(record["record"]))
        assert game is not None and not game.errors
        assert (game.headers["White"] == "sf") == (k == 1)
        board = game.board()
        for move in game.mainline_moves():
            assert move in board.legal_moves
            board.push(move)
        plies = board.ply()
        assert 0 < plies <= 60
        result = game.headers["Result"]
        if board.is_checkmate():
            assert result == ("1-0" if board.turn == chess.BLACK else "0-1")
        elif plies == 60:
            assert result == "1/2-1/2"  # adjudicated at the ply cap
