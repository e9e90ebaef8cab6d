"""The engine front ends on tiny untrained models: Engine statistics, GTP and UCI through their
command sets (in-process streams, malformed input included), `azjax analyze`, `azjax arena`, and
complete games against GNU Go (GTP) and Stockfish (UCI) when they are installed."""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import chess
import chess.pgn
import numpy as np
import pytest

from azjax.cli import main
from azjax.engines.clock import SpeedModel, visit_buckets
from azjax.engines.engine import Engine
from azjax.engines.gtp import GTPEngine
from azjax.engines.lc0 import cp_from_q, format_table
from azjax.engines.loading import EngineDefaults, EngineLoad, start_engine
from azjax.engines.position import Position
from azjax.engines.uci import UCIEngine
from azjax.search.game_search import ParentAwareEvaluator

VISITS = 4  # the eval_simulations of the untrained `models` (conftest.py)
WAIT = 300.0  # seconds before a missing answer fails a test: a hang guard, never a timing assertion


def gtp_session(engine: Engine | EngineLoad, commands: str) -> list[str]:
    out = io.StringIO()
    GTPEngine(engine, io.StringIO(commands), out).run()
    text = out.getvalue()
    assert text.endswith("\n\n")
    return text[:-2].split("\n\n")


class LineQueue(io.TextIOBase):
    """An engine's output stream: each complete line goes into `lines` as it is written."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *done, self._partial = (self._partial + text).split("\n")
        for line in done:
            self.lines.put(line)
        return len(text)


class Session:
    """An engine server's `run()` in a thread: commands go in through a pipe, answers come out line by line through
    a queue (a reader, not select + readline, which loses lines already buffered)."""

    def __init__(self, server: Callable[[TextIO, TextIO], GTPEngine | UCIEngine]):
        read_fd, write_fd = os.pipe()
        self._inp = open(read_fd, encoding="utf-8")  # noqa: SIM115 (closed when the server's loop ends)
        self._writer = open(write_fd, "w", encoding="utf-8")  # noqa: SIM115
        self._out = LineQueue()
        self._thread = threading.Thread(target=server(self._inp, self._out).run, daemon=True)
        self._thread.start()

    def send(self, line: str) -> None:
        self._writer.write(line + "\n")
        self._writer.flush()

    def line(self) -> str:
        return self._out.lines.get(timeout=WAIT)

    def gtp_reply(self) -> str:
        lines = [self.line()]
        while lines[-1]:
            lines.append(self.line())
        return "\n".join(lines[:-1])

    def until(self, last: Callable[[str], bool]) -> list[str]:
        lines = [self.line()]
        while not last(lines[-1]):
            lines.append(self.line())
        return lines

    def close(self) -> None:
        self._writer.close()
        self._thread.join(WAIT)
        self._inp.close()


def held_load(engine: Engine) -> tuple[EngineLoad, threading.Event]:
    """A load of `engine` that lasts until the returned event is set: a deliberately slow network."""
    release = threading.Event()

    def build() -> Engine:
        release.wait()
        return engine

    return EngineLoad(build, EngineDefaults(game=engine.game.name, visits=engine.visits, n_scl=engine.n_scl)), release


# ---------------------------------------------------------------- engine statistics


def test_cp_formula_reproduces_lc0_table():
    table = {0.50: 0.00, 0.55: 0.18, 0.60: 0.36, 0.65: 0.57, 0.70: 0.81, 0.75: 1.11, 0.80: 1.52, 0.85: 2.16,
             0.90: 3.36, 0.95: 6.71, 1.00: 128.00}
    for winrate, pawns in table.items():
        assert cp_from_q(2 * winrate - 1) / 100 == pytest.approx(pawns, abs=0.006)
    assert cp_from_q(-0.3) == pytest.approx(-cp_from_q(0.3))


def test_engine_statistics_position_and_undo(models):
    e = Engine.from_checkpoint(str(models["connect_four"]))
    assert e.visits == VISITS
    r = e.search()
    assert r.visits == VISITS and len(r.stats) == 7
    assert sum(s.n for s in r.stats) == VISITS
    assert [s.n for s in r.stats] == sorted((s.n for s in r.stats), reverse=True)
    assert sum(s.p for s in r.stats) == pytest.approx(1.0, abs=1e-5)
    best = next(s for s in r.stats if s.move == r.best_move)
    assert best.n > 0 and r.value == pytest.approx(best.q) and r.pv[0] == r.best_move
    for s in r.stats:
        assert (s.v is not None) == (s.n > 0)
        assert s.q_plus_u == pytest.approx(s.q + s.u)
        if s.n == 0:
            assert s.q == pytest.approx(r.root_value)
    assert r.cp is None
    lines = format_table(r)
    assert len(lines) == 8 and "N:" in lines[0] and "(V:  -.----)" in lines[-2] and lines[-1].startswith("node")
    # position: play, undo, set_position leaves the position unchanged on error
    pos = e.position
    pos.play("4")
    move, _ = e.genmove()
    assert pos.moves == ["4", move] and pos.to_move() == "b"
    pos.undo()
    assert pos.moves == ["4"] and pos.to_move() == "w"
    with pytest.raises(ValueError, match="not a Connect Four column"):
        pos.set_position(["1", "2", "8"])
    assert pos.moves == ["4"]
    for _ in range(6):
        pos.play("1")
    with pytest.raises(ValueError, match="illegal"):
        pos.play("1")


def test_visits_for_time():
    class Fake:
        visits = 64
        buckets = visit_buckets(64)
        speed = SpeedModel()

    Fake.speed.observe(64, 0.64)  # 10 ms a visit; a bucket is chosen with a quarter of its time to spare
    vft = Engine.visits_for_time
    assert vft(Fake, None) == 64 and vft(Fake, 1.0) == 64
    assert vft(Fake, 0.2) == 16 and vft(Fake, 0.001) == 1


# ---------------------------------------------------------------- GTP


def test_gtp_connect_four_full_command_set(models):
    e = Engine.from_checkpoint(str(models["connect_four"]))
    r = gtp_session(e, "\n".join([
        "protocol_version", "1 name", "2 version", "known_command genmove", "known_command foo", "list_commands",
        "boardsize 9", "komi 7.5", "final_score", "play b 4", "12 genmove w", "showboard", "play b 9",
        "play b x", "play w 4", "play x 4", "play b", "undo", "undo", "undo", "lz-analyze", "azjax-analyze w",
        "time_settings 60 0 0", "time_settings 1", "time_left b 30 0", "time_left b x 0", "clear_board",
        "genmove b", "foo bar", "7", "\x01\t# only a comment", "quit", "name",
    ]) + "\n")
    assert r[0] == "= 2" and r[1] == "=1 azjax" and r[2].startswith("=2 ")
    assert r[3] == "= true" and r[4] == "= false"
    assert "genmove" in r[5] and "lz-analyze" in r[5] and "final_score" in r[5]
    for i in (6, 7, 8):
        assert r[i].startswith("? ") and "Go only" in r[i]
    assert r[9] == "="
    assert r[10].startswith("=12 ") and r[10][4:] in list("1234567")
    assert r[11].startswith("= \n") or r[11].startswith("=\n")
    assert "1 2 3 4 5 6 7" in r[11] and "X" in r[11] and "O" in r[11]
    assert r[12] == "? not a Connect Four column (1-7): '9'"
    assert r[13].startswith("? not a Connect Four column")
    assert r[14] == "? not w's turn"
    assert r[15] == "? invalid color 'x'"
    assert r[16].startswith("? play needs")
    assert r[17] == "=" and r[18] == "=" and r[19] == "? cannot undo"
    info = r[20].split("\n")
    assert info[0] == "=" and all(line.startswith("info move ") for line in info[1:]) and len(info) > 1
    assert " visits " in info[1] and " winrate " in info[1] and " prior " in info[1] and " order 0 pv " in info[1]
    assert r[21] == "? not w's turn"
    assert r[22] == "=" and r[23].startswith("? time_settings") and r[24] == "=" and r[25].startswith("? ")
    assert r[26] == "=" and r[27][2:] in list("1234567")
    assert r[28] == "? unknown command" and r[29] == "?7 empty command"
    assert r[30] == "=" and len(r) == 31  # quit ends the session; `name` after it is never read


def test_gtp_go_commands(models):
    e = Engine.from_checkpoint(str(models["go_9x9"]))
    r = gtp_session(e, "\n".join([
        "boardsize 19", "boardsize 9", "komi 6.5", "play b D4", "play B e5", "play w D4", "play w Z9", "play w I5",
        "play w pass", "genmove w", "showboard", "final_score", "undo", "komi 0.5", "showboard", "genmove b",
        "lz-analyze", "komi x", "play b resign", "play w pass", "play b pass", "play w pass", "genmove b",
        "final_score", "quit",
    ]) + "\n")
    assert r[0] == "? unacceptable size" and r[1] == "=" and r[2] == "="
    assert r[3] == "=" and r[4] == "="  # b E5 out of turn: White passes first
    assert r[5] == "? illegal move" and r[6].startswith("? not a Go vertex") and r[7].startswith("? not a Go vertex")
    assert r[8] == "="
    assert r[9] == "? not w's turn (a pass for the other side would end the game)"
    assert "komi 6.5, Black to move" in r[10] and r[10].count("X") == 2
    assert r[11] == "= B+74.5"  # Tromp-Taylor: two black stones own the empty board
    assert r[12] == "=" and r[13] == "="
    assert "komi 0.5, White to move" in r[14]
    assert r[15] == "? not b's turn (a pass for the other side would end the game)" or r[15].startswith("= ")
    info = r[16].split("\n")
    assert info[0] == "=" and info[1].startswith("info move ")
    pv_moves = info[1].split(" pv ")[1].split()
    assert all(m == "PASS" or m[0] in "ABCDEFGHJ" for m in pv_moves)
    assert r[17].startswith("? komi is not a number") and r[18] == "? resign is not a move here"
    # ... then two passes end the game: no more moves, and the final score
    assert r[-3] == "? the game is over" and r[-2].startswith("= B+") and r[-1] == "="
    # PUCT statistics: U follows mctx's PUCT constant; the most-visited move is the one played
    e.position.reset()
    r = e.search()
    n_par = sum(s.n for s in r.stats)
    assert n_par == VISITS and len(r.stats) == 82
    c = 1.25 + math.log((n_par + 19652 + 1) / 19652)
    for s in r.stats:
        assert s.u == pytest.approx(c * s.p * math.sqrt(n_par) / (1 + s.n), rel=1e-4, abs=1e-7)
    assert r.best_move == r.stats[0].move and r.stats[0].n == max(s.n for s in r.stats)
    assert r.stats[0].pv[0] == r.best_move


def long_go_game(game, num_moves: int, seed: int = 0) -> list[str]:  # noqa: ANN001
    """`num_moves` random legal moves of a Go game that none of them ends: board moves, a pass only where none is
    legal (a random pass would, sooner or later, meet the other side's only move, a pass, and end the game)."""
    rng = np.random.default_rng(seed)
    pos = Position(game)
    pass_action = game.num_actions - 1
    while len(pos.moves) < num_moves:
        legal = np.flatnonzero(np.asarray(pos.state.legal_action_mask))
        board = legal[legal != pass_action]
        pos.play_action(int(rng.choice(board)) if board.size else pass_action)
        assert not pos.is_over, f"the random game ended after {len(pos.moves)} moves: pick another seed"
    return pos.moves


def test_gtp_go_game_runs_past_pgx_s_162_move_cap(models):
    """pgx ends 9x9 Go after 162 moves; the engine's game goes on: `play` (passes too) and `genmove` past move 162,
    the network reading positions past pgx's cap, and the final score of the game's own end."""
    e = Engine.from_checkpoint(str(models["go_9x9"]))
    moves = long_go_game(e.game, 170)
    colours = ["b" if i % 2 == 0 else "w" for i in range(172)]
    r = gtp_session(e, "\n".join(["boardsize 9", "clear_board", "komi 7.5"]
                                 + [f"play {c} {m}" for c, m in zip(colours, moves, strict=False)]
                                 + [f"play {colours[170]} pass", f"genmove {colours[171]}", "final_score",
                                    "quit"]) + "\n")
    assert r[: 3 + 170] == ["="] * (3 + 170)
    played = r[3 + 170 :]
    assert played[0] == "=" and played[1][:2] == "= " and played[2][:4] in ("= B+", "= W+") and played[3] == "="
    engine_move = played[1][2:]
    assert engine_move == "pass" or engine_move[0] in "ABCDEFGHJ"
    assert len(e.position.moves) == 172 and not e.position.cut_short
    assert e.position.is_over == (engine_move == "pass")  # two passes: the game's own end, not a cap


def test_gtp_chess_moves(models):
    e = Engine.from_checkpoint(str(models["chess"]))
    r = gtp_session(e, "play w e2e4\ngenmove b\nplay w e7e5\nplay b e7e5\nboardsize 8\nshowboard\nquit\n")
    assert r[0] == "="
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(r[1][2:]) in board.legal_moves
    assert r[2] == "? illegal move" and r[3] == "? not b's turn" and "Go only" in r[4]
    assert "P" in r[5] and r[6] == "="


# ---------------------------------------------------------------- UCI


def uci_session(engine: Engine | EngineLoad, commands: list[str]) -> list[str]:
    out = io.StringIO()
    UCIEngine(engine, io.StringIO("\n".join(commands) + "\n"), out).run()
    return out.getvalue().splitlines()


@pytest.mark.slow
def test_uci_full_command_set(models):
    e = Engine.from_checkpoint(str(models["chess"]))
    lines = uci_session(e, [
        "uci", "isready", "setoption name VerboseMoveStats value true", f"setoption name Visits value {VISITS}",
        "setoption name NScl value 0", "setoption name Hash value 16", "setoption name Visits value x",
        "position startpos moves e2e4 e7e5", "go nodes 4",
        "position startpos moves e2e4 e7e5 g1f3", "go movetime 5000",
        "position fen rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1 moves e7e5", "d",
        "go wtime 60000 btime 60000 winc 0 binc 0",
        "position startpos moves e2e5", "position fen garbage", "position", "go depth", "go sideways", "blah",
        "setoption name VerboseMoveStats value false",
        "position startpos", "go infinite", "isready", "stop",
        "ucinewgame", "position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "go nodes 4", "quit", "isready",
    ])
    text = "\n".join(lines)
    assert lines[0] == "id name azjax" and "uciok" in lines
    assert any(ln.startswith("option name Visits type spin") for ln in lines)
    assert "info string unknown option Hash" in lines
    assert "info string error: Visits needs an integer, got 'x'" in lines
    bestmoves = [ln for ln in lines if ln.startswith("bestmove")]
    assert len(bestmoves) == 5 and bestmoves[-1] == "bestmove 0000"  # stalemate: no legal move
    positions = [["e2e4", "e7e5"], ["e2e4", "e7e5", "g1f3"], None, []]
    for line, moves in zip(bestmoves, positions, strict=False):
        if moves is None:
            board = chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
            board.push_uci("e7e5")
        else:
            board = chess.Board()
            for m in moves:
                board.push_uci(m)
        assert chess.Move.from_uci(line.split()[1]) in board.legal_moves
    infos = [ln for ln in lines if ln.startswith("info depth")]
    assert infos and all(" nodes " in ln and " nps " in ln and " score cp " in ln and " pv " in ln for ln in infos)
    table = [ln for ln in lines if ln.startswith("info string") and "(Q+U:" in ln]
    assert len(table) >= 3 * 20  # verbose stats for the first three searches (every legal move)
    first = lines.index(bestmoves[0])
    assert lines[first - 1].startswith("info string node")
    counts = [int(ln.split("N:")[1].split()[0]) for ln in lines[first - 21 : first - 1]]
    assert counts == sorted(counts) and sum(counts) <= VISITS  # lc0's order: most visits last
    assert "info string fen rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2" in lines
    assert "info string error: illegal move: 'e2e5'" in lines
    assert any(ln.startswith("info string error: bad FEN 'garbage'") for ln in lines)
    assert "info string error: position needs startpos or fen" in lines
    assert "info string error: go depth needs a number" in lines
    assert "info string error: unknown go parameter 'sideways'" in lines
    assert "info string unknown command blah" in lines
    assert text.count("readyok") == 2  # the `isready` after quit is never read
    # `go infinite` answered `readyok` while searching, and its bestmove came after `stop`
    inf = lines.index("readyok", lines.index("readyok") + 1)
    assert bestmoves[3] in lines[inf:]


def test_uci_refuses_other_games(models):
    with pytest.raises(ValueError, match="UCI is for chess"):
        UCIEngine(Engine.from_checkpoint(str(models["connect_four"])), io.StringIO(), io.StringIO())


# ---------------------------------------------------------------- start-up: the network loads in the background


def test_gtp_answers_the_handshake_before_the_network_is_loaded(models):
    engine = Engine.from_checkpoint(str(models["connect_four"]))
    load, release = held_load(engine)
    session = Session(lambda inp, out: GTPEngine(load, inp, out))
    for command in ("1 protocol_version", "2 name", "3 version", "4 known_command genmove", "5 list_commands"):
        session.send(command)
    replies = [session.gtp_reply() for _ in range(5)]
    assert not load.done  # every answer came while the network was still loading
    assert replies[:2] == ["=1 2", "=2 azjax"] and replies[2].startswith("=3 ") and replies[3] == "=4 true"
    assert replies[4].startswith("=5 ") and "genmove" in replies[4].split("\n")
    session.send("6 genmove b")  # needs the network: answered once it is loaded
    release.set()
    reply = session.gtp_reply()
    assert reply[:3] == "=6 " and reply[3:] in list("1234567") and load.done
    session.close()


def test_uci_answers_uci_before_the_network_is_loaded_and_isready_after(models):
    engine = Engine.from_checkpoint(str(models["chess"]))
    load, release = held_load(engine)
    session = Session(lambda inp, out: UCIEngine(load, inp, out))
    session.send("uci")
    lines = session.until(lambda line: line == "uciok")
    assert not load.done and lines[0] == "id name azjax"
    assert f"option name Visits type spin default {VISITS} min 1 max 8192" in lines
    session.send("isready")
    release.set()
    assert session.line() == "readyok" and load.done
    session.close()


@pytest.mark.slow
def test_uci_nps_counts_the_search_alone_not_loading_or_compiling(models):
    """A fake clock that jumps 100 s while the network loads and while a search compiles: the info line's nps is
    the visits over the search's own (fake) milliseconds."""
    engine = Engine.from_checkpoint(str(models["chess"]))
    now = [0.0]

    def clock() -> float:
        now[0] += 0.001
        return now[0]

    compile_search = engine.compile

    def slow_compile(fn, *args):  # noqa: ANN001, ANN202
        now[0] += 100.0
        return compile_search(fn, *args)

    def slow_build() -> Engine:
        now[0] += 100.0
        return engine

    engine.clock, engine.compile = clock, slow_compile
    load = EngineLoad(slow_build, EngineDefaults(game="chess", visits=VISITS, n_scl=0))
    # 3 visits: a search size no other test compiles, so this one compiles it (through slow_compile)
    lines = uci_session(load, ["setoption name Visits value 3", "position startpos", "go", "isready", "quit"])
    info = next(line.split() for line in lines if line.startswith("info depth"))
    nodes, nps = int(info[info.index("nodes") + 1]), int(info[info.index("nps") + 1])
    assert engine.compile_seconds >= 100.0 and nodes == 3
    assert nps > nodes  # the search took under one (fake) second; with the compile or the load in it, nps would be 0


def corrupt_checkpoints(models, tmp_path: Path) -> dict[str, Path]:  # noqa: ANN001
    """Chess checkpoints whose config reads but whose parameters do not load: garbage bytes, and Connect Four's."""
    out = {}
    for name, params in (("corrupt", b"\x00 not msgpack"), ("mismatched", None)):
        out[name] = tmp_path / name
        out[name].mkdir()
        shutil.copy(models["chess"] / "config.json", out[name] / "config.json")
        if params is None:
            shutil.copy(models["connect_four"] / "params.msgpack", out[name] / "params.msgpack")
        else:
            (out[name] / "params.msgpack").write_bytes(params)
    return out


def test_a_checkpoint_that_fails_to_load_in_the_background_is_one_line_not_a_traceback(models, tmp_path):
    for name, path in corrupt_checkpoints(models, tmp_path).items():
        args = argparse.Namespace(checkpoint=str(path), visits=None, n_scl=None, search=None, seed=0)
        err = io.StringIO()
        lines = uci_session(start_engine(args, "uci", err=err), ["uci", "isready", "go nodes 4", "quit"])
        said = err.getvalue().splitlines()
        assert len(said) == 1 and said[0].startswith(f"azjax uci: error: cannot load checkpoint {path}: "), said
        why = "is corrupt or not a parameter file" if name == "corrupt" else "does not match its config's network"
        assert why in said[0]
        error = f"info string error: {said[0][len('azjax uci: error: '):]}"
        assert lines[-4:] == ["uciok", error, "readyok", error]  # `go` gets the error, and no bestmove
        err = io.StringIO()
        r = gtp_session(start_engine(args, "gtp", err=err), "name\ngenmove b\nquit\n")
        assert r[0] == "= azjax" and r[1] == f"? {said[0][len('azjax uci: error: '):]}" and r[2] == "="
        assert len(err.getvalue().splitlines()) == 1


def test_gtp_plays_a_sai_network_as_the_sensible_agent_when_asked(models):
    sai_model = Path(__file__).resolve().parents[2] / "results" / "models" / "go_7x7_sai"
    args = argparse.Namespace(checkpoint=str(sai_model), visits=8, n_scl=None, search=None, seed=0,
                              sensible_lambda=0.5)
    engine = start_engine(args, "gtp").get()
    assert engine.config.eval_sensible_lambda == 0.5 and isinstance(engine.evaluate, ParentAwareEvaluator)
    args.sensible_lambda = None  # the flag left out: the network's own setting
    plain = start_engine(args, "gtp").get()
    assert plain.config.eval_sensible_lambda is None and not isinstance(plain.evaluate, ParentAwareEvaluator)
    args.checkpoint, args.sensible_lambda = str(models["connect_four"]), 0.5
    with pytest.raises(ValueError, match="sensible_lambda=0.5 needs value_head='sai'"):
        start_engine(args, "gtp")  # refused before anything loads


@pytest.mark.slow
def test_engine_commands_start_fast_and_fail_in_one_line(models, tmp_path, capsys):
    """The real `azjax uci` / `azjax gtp`: a missing config fails at once; `uci` then `quit` during the load exits
    cleanly; a corrupt parameter file is one line on stderr, an error answer, and exit code 2."""
    assert main(["uci", "--checkpoint", str(tmp_path / "nowhere")]) == 2
    assert "neither a run directory nor an exported model" in capsys.readouterr().err
    command = [sys.executable, "-m", "azjax.cli"]
    quick = subprocess.run([*command, "uci", "--checkpoint", str(models["chess"])], input="uci\nquit\n",
                           capture_output=True, text=True, timeout=WAIT)
    assert quick.returncode == 0 and "uciok" in quick.stdout.splitlines() and "Traceback" not in quick.stderr
    corrupt = corrupt_checkpoints(models, tmp_path)["corrupt"]
    bad = subprocess.run([*command, "gtp", "--checkpoint", str(corrupt)], input="1 name\n2 genmove b\nquit\n",
                         capture_output=True, text=True, timeout=WAIT)
    errors = [line for line in bad.stderr.splitlines() if not line.startswith("JAX compilation cache")]
    assert bad.returncode == 2 and len(errors) == 1 and errors[0].startswith("azjax gtp: error: cannot load")
    assert bad.stdout.split("\n\n")[:3] == ["=1 azjax", f"?2 {errors[0][len('azjax gtp: error: '):]}", "="]


# ---------------------------------------------------------------- analyze


@pytest.mark.slow
def test_analyze_takes_the_gumbel_roots_considered_moves_and_c_scale_from_its_flags(models, capsys, monkeypatch):
    go = str(models["go_9x9"])
    built: list[dict] = []
    from_checkpoint = Engine.from_checkpoint.__func__
    monkeypatch.setattr(Engine, "from_checkpoint",
                        classmethod(lambda cls, path, **kw: built.append(kw) or from_checkpoint(cls, path, **kw)))
    gumbel = ["analyze", "--checkpoint", go, "--search", "gumbel", "--moves", "D4 E5", "--json"]
    assert main(gumbel) == 0
    assert len(json.loads(capsys.readouterr().out)["visits"]) > 1
    assert main([*gumbel, "--considered", "1", "--c_scale", "1.5"]) == 0
    assert len(json.loads(capsys.readouterr().out)["visits"]) == 1  # the search visits the one considered move
    assert built[-1]["config_overrides"] == {"eval_max_num_considered_actions": 1, "eval_gumbel_c_scale": 1.5}


@pytest.mark.slow
def test_analyze_single_and_batched(models, tmp_path, capsys):
    go = str(models["go_9x9"])
    assert main(["analyze", "--checkpoint", go, "--moves", "D4 E5", "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "b to move; 4 visits" in out and "node" in out and "value " in out and "pv " in out
    assert len([ln for ln in out.splitlines() if "(Q+U:" in ln]) == 5
    positions = tmp_path / "pos.txt"
    positions.write_text("D4 E5\n\nC3, C4\n# comment\nZ9\nD4 D4\npass pass\n")
    out_file = tmp_path / "out" / "a.jsonl"
    assert main(["analyze", "--checkpoint", go, "--positions", str(positions), "--out", str(out_file),
                 "--batch_size", "2"]) == 0
    assert "searched 3 of 5 positions (2 errors)" in capsys.readouterr().out
    rows = [json.loads(ln) for ln in out_file.read_text().splitlines()]
    assert [r["position"] for r in rows] == ["D4 E5", "C3, C4", "Z9", "D4 D4", "pass pass"]
    assert rows[0]["move"] in rows[0]["visits"] and sum(rows[0]["visits"].values()) == VISITS
    assert -1 <= rows[0]["value"] <= 1 and "cp" not in rows[0]
    assert "not a Go vertex" in rows[2]["error"] and "illegal" in rows[3]["error"]
    assert rows[4]["move"] is None
    # the batched rows equal single searches of the same positions
    assert main(["analyze", "--checkpoint", go, "--moves", "C3 C4", "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert single["move"] == rows[1]["move"] and single["visits"] == rows[1]["visits"]
    assert single["value"] == pytest.approx(rows[1]["value"], abs=1e-5)
    # chess: FEN input and centipawns
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert main(["analyze", "--checkpoint", str(models["chess"]), "--fen", fen, "--moves", "e7e5", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["cp"] == pytest.approx(cp_from_q(row["value"]))
    assert chess.Move.from_uci(row["move"]) in chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq "
                                                           "e6 0 2").legal_moves
    assert main(["analyze", "--checkpoint", go, "--fen", fen]) == 2
    assert "chess only" in capsys.readouterr().err


def test_the_committed_9x9_model_plays_its_tables_settings_without_flags():
    """`azjax gtp --checkpoint results/models/go_9x9_sai` builds this engine: 512 visits and SAI's sensible agent at
    lambda 0.5, as its table against GNU Go was played, from its config's player settings (the model trained with
    neither); `--sensible_lambda 0` gives the plain winrate."""
    model = str(Path(__file__).resolve().parents[2] / "results" / "models" / "go_9x9_sai")
    engine = Engine.from_checkpoint(model)
    assert engine.visits == 512 and isinstance(engine.evaluate, ParentAwareEvaluator)
    assert engine.config.sensible_lambda == 0.0 and engine.config.eval_sensible_lambda == 0.5
    plain = Engine.from_checkpoint(model, config_overrides={"eval_sensible_lambda": 0.0})
    assert not isinstance(plain.evaluate, ParentAwareEvaluator)
