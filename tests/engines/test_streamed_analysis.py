"""Streamed analysis as GUIs read it: GTP `lz-analyze` / `kata-analyze` with an interval (one info line per interval,
from searches that keep growing, until the next command), UCI `go infinite` / `go ponder` with its info lines every
`InfoInterval` and `UCI_ShowWDL`; and the pieces under them (the input reader thread, the visit plan, WDL from Q).

The GTP streams run real searches of the tiny Connect Four model (each new search size compiles in a few seconds);
the UCI ones replace the chess search by an instant stand-in, since the point there is the cadence and the fields,
and a chess search of each new size would compile for several seconds."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from pathlib import Path

import jax
import pytest
from test_engines import VISITS, WAIT, Session, gtp_session

from azjax.engines.engine import Engine
from azjax.engines.gtp import GTPEngine
from azjax.engines.lc0 import SearchResult, cp_from_q, wdl_from_q
from azjax.engines.streaming import LineReader, analysis_cap
from azjax.engines.uci import UCIEngine
from lab.reliability.fuzz import PipeEngine

INTERVAL_CS = 10  # GTP interval in centiseconds: lines every 0.1 s once the searches are compiled


def entries(line: str) -> list[dict[str, str]]:
    """The moves of one streamed line (`info move A ... pv A B info move C ... pv C`), each as its fields."""
    assert line.startswith("info move "), line
    out = []
    for chunk in re.split(r" (?=info move )", line):
        head, pv = chunk.split(" pv ")
        words = head.split()[1:]  # after `info`
        fields = dict(zip(words[::2], words[1::2], strict=True))
        fields["pv"] = pv
        out.append(fields)
    return out


def stream_lines(session: Session, count: int) -> list[str]:
    """The `=` of a streamed analysis, then its first `count` info lines."""
    assert session.line() == "="
    return [session.line() for _ in range(count)]


def end_stream(session: Session, command: str) -> list[str]:
    """Sends `command` during a stream; the info lines sent before the stream ended, then the command's reply."""
    session.send(command)
    rest = session.until(lambda line: line == "")  # the empty line that ends the analysis response
    assert all(line.startswith("info move ") for line in rest[:-1]), rest
    return [*rest[:-1], session.gtp_reply()]


# ---------------------------------------------------------------- GTP


@pytest.mark.slow
def test_lz_analyze_streams_growing_searches_until_the_next_command(models):
    engine = Engine.from_checkpoint(str(models["connect_four"]))
    session = Session(lambda inp, out: GTPEngine(engine, inp, out))
    session.send(f"lz-analyze {INTERVAL_CS}")
    lines = stream_lines(session, 3)
    totals = []
    for line in lines:
        moves = entries(line)
        assert [int(m["order"]) for m in moves] == list(range(len(moves)))
        visits = [int(m["visits"]) for m in moves]
        assert visits == sorted(visits, reverse=True) and min(visits) > 0
        for m in moves:
            assert m["move"] in "1234567" and m["pv"].split()[0] == m["move"]
            assert 0 <= int(m["winrate"]) <= 10000 and 0 <= int(m["prior"]) <= 10000 and m["lcb"] == m["winrate"]
        totals.append(sum(visits))
    # the first line is the first search (--visits), then bigger ones (a line may skip a size: at most one per interval)
    assert totals[0] == VISITS and totals == sorted(totals) and totals[-1] > VISITS
    *more, reply = end_stream(session, "name")
    assert reply == "= azjax"
    later = [sum(int(m["visits"]) for m in entries(line)) for line in more]  # sent before `name` was read
    assert later == sorted(later) and all(total >= totals[-1] for total in later)
    session.send("2 genmove b")  # the position was left as it was: b (the first player) is still to move
    assert session.gtp_reply()[3:] in list("1234567")
    session.close()


def test_kata_analyze_uses_katago_fields_and_scales(models):
    engine = Engine.from_checkpoint(str(models["connect_four"]))
    session = Session(lambda inp, out: GTPEngine(engine, inp, out))
    session.send(f"7 kata-analyze B interval {INTERVAL_CS} maxmoves 2 ownership true")
    assert session.line() == "=7"
    for line in [session.line() for _ in range(3)]:
        moves = entries(line)
        assert 1 <= len(moves) <= 2  # maxmoves
        for m in moves:
            assert set(m) == {"move", "visits", "utility", "winrate", "prior", "lcb", "utilityLcb", "order", "pv"}
            winrate, utility = float(m["winrate"]), float(m["utility"])
            assert 0 <= winrate <= 1 and -1 <= utility <= 1 and 0 <= float(m["prior"]) <= 1
            assert utility == pytest.approx(2 * winrate - 1, abs=1e-5)
        assert int(moves[0]["visits"]) > 0
    *_, reply = end_stream(session, "3 protocol_version")
    assert reply == "=3 2"
    session.close()


def test_a_command_already_waiting_ends_the_stream_after_its_first_line(models):
    """A GUI (or the fuzz driver) that sends the analysis and the next command in one write: one info line, the end
    of the response, then the command's answer. Refusals answer `?` before any `=`."""
    engine = Engine.from_checkpoint(str(models["connect_four"]))
    r = gtp_session(engine, "\n".join([
        f"lz-analyze {INTERVAL_CS}", "name", f"lz-analyze w {INTERVAL_CS}", "lz-analyze 10 avoid b 1 1",
        "kata-analyze interval", "kata-analyze 10 maxmoves 0", "kata-analyze 10 ownership maybe", "lz-analyze 10 10",
        f"kata-analyze b {INTERVAL_CS} minmoves 7", "quit",
    ]) + "\n")
    head, line = r[0].split("\n")
    assert head == "=" and sum(int(m["visits"]) for m in entries(line)) == VISITS and r[1] == "= azjax"
    assert r[2] == "? not w's turn" and r[3] == "? avoid is not supported" and r[4] == "? interval needs a number"
    assert r[5] == "? maxmoves must be at least 1" and r[6] == "? ownership needs true or false"
    assert r[7].startswith("? cannot parse analyze argument")
    head, line = r[8].split("\n")
    assert head == "=" and len(entries(line)) == 7  # minmoves: every column, the unvisited ones too
    assert r[9] == "=" and len(r) == 10


def test_analysis_without_an_interval_answers_once(models):
    """No interval (or 0): one search, one line per move, and the response ends without waiting for a command."""
    engine = Engine.from_checkpoint(str(models["connect_four"]))
    r = gtp_session(engine, "kata-analyze\nlz-analyze b 0\nkata-analyze interval 0 maxmoves 1\nquit\n")
    for reply in r[:3]:
        lines = reply.split("\n")
        assert lines[0] == "=" and len(lines) > 1 and all(line.startswith("info move ") for line in lines[1:])
        assert sum(int(line.split(" visits ")[1].split()[0]) for line in lines[1:]) <= VISITS
        assert all(len(entries(line)) == 1 for line in lines[1:])
    assert " utility " in r[0] and " utility " not in r[1] and r[2].count("\n") == 1 and r[3] == "="


@pytest.mark.slow
def test_azjax_gtp_streams_through_a_pipe_and_exits_cleanly_after_quit(models):
    """The real `azjax gtp` as a GUI runs it: a stream ended by `name`, then `quit` while the GUI keeps the pipe open.
    The input is read in a daemon thread that is still blocked reading at exit: through sys.stdin's BufferedReader
    the interpreter aborted there (SIGABRT, "could not acquire lock ... at interpreter shutdown")."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]),
               AZJAX_CACHE_DIR=str(jax.config.jax_compilation_cache_dir))  # the searches this session has compiled
    engine = PipeEngine([sys.executable, "-m", "azjax.cli", "gtp", "--checkpoint", str(models["connect_four"])],
                        env=env)
    try:
        def line() -> str:
            got = engine.read_line(WAIT)
            assert got is not None, "no answer"
            return got.decode().rstrip("\n")

        engine.send(f"lz-analyze {INTERVAL_CS}\n".encode())
        assert line() == "="
        totals = [sum(int(m["visits"]) for m in entries(line())) for _ in range(2)]
        assert totals[0] == VISITS and totals[1] >= totals[0]
        engine.send(b"1 name\n")
        while (text := line()) != "":
            assert text.startswith("info move ")
        assert (line(), line()) == ("=1 azjax", "")
        engine.send(b"quit\n")
        assert (line(), line()) == ("=", "")
        assert engine.proc.wait(timeout=WAIT) == 0, list(engine.stderr_tail)  # stdin still open
    finally:
        engine.close()


# ---------------------------------------------------------------- UCI


@pytest.fixture
def chess_engine(models, monkeypatch) -> tuple[Engine, list[int]]:
    """The chess engine with an instant stand-in search (Q 0.2, 5 ms a search) and analysis (chunks of `Visits`
    up to the 16 x `Visits` ceiling), nothing to compile; the list collects the visits each call reached."""
    engine = Engine.from_checkpoint(str(models["chess"]))
    searched: list[int] = []

    def result(visits: int) -> SearchResult:
        return SearchResult("e2e4", 0, 0.2, 0.2, 0.1, visits, [], ["e2e4", "e7e5"], cp_from_q(0.2), 0.005)

    def search(visits: int | None = None, child_pvs: bool | int | None = None) -> SearchResult:
        time.sleep(0.005)
        searched.append(visits or engine.visits)
        return result(visits or engine.visits)

    def grow(visits: int | None = None, child_pvs: bool | int | None = None) -> SearchResult | None:
        reached = (searched[-1] if searched else 0) + engine.analysis_chunk
        if reached > engine.max_visits:
            return None
        time.sleep(0.005)
        searched.append(reached)
        return result(reached)

    monkeypatch.setattr(engine, "search", search)
    monkeypatch.setattr(engine, "grow", grow)
    monkeypatch.setattr(engine, "prepare", lambda warm_up=None: 0.0)
    return engine, searched


def info_fields(line: str) -> dict[str, str]:
    """`info depth 2 nodes 8 ... score cp 20 wdl 600 0 400 pv e2e4 e7e5` as {"depth": "2", ..., "score": "cp 20",
    "wdl": "600 0 400", "pv": "e2e4 e7e5"}."""
    words = line.split()
    assert words[0] == "info" and "pv" in words, line
    fields, i = {}, 1
    while i < len(words):
        size = {"score": 2, "wdl": 3, "pv": len(words) - i - 1}.get(words[i], 1)
        fields[words[i]] = " ".join(words[i + 1 : i + 1 + size])
        i += 1 + size
    return fields


def test_uci_go_infinite_streams_info_with_wdl_until_stop(chess_engine):
    engine, searched = chess_engine
    session = Session(lambda inp, out: UCIEngine(engine, inp, out))
    session.send("uci")
    options = session.until(lambda line: line == "uciok")
    assert "option name UCI_ShowWDL type check default false" in options
    assert "option name InfoInterval type spin default 1000 min 10 max 60000" in options
    for command in ("setoption name InfoInterval value 20", "setoption name UCI_ShowWDL value true",
                    "position startpos", "go infinite"):
        session.send(command)
    plan = list(range(VISITS, analysis_cap(VISITS) + 1, VISITS))  # chunks of 4 visits: 4, 8, ..., 64
    lines = [session.line() for _ in range(len(plan) + 3)]  # a line per chunk, then the last one every 20 ms
    fields = [info_fields(line) for line in lines]
    assert [int(f["nodes"]) for f in fields] == plan + [plan[-1]] * 3
    times = [int(f["time"]) for f in fields]
    assert times == sorted(times) and times[-1] > times[len(plan) - 1]
    for line, f in zip(lines, fields, strict=True):
        w, d, loss = (int(x) for x in f["wdl"].split())
        assert (w, d, loss) == (600, 0, 400) and w + d + loss == 1000  # Q 0.2, no draw class
        assert line.index(" score cp ") < line.index(" wdl ") < line.index(" pv ")  # lc0's order
        assert f["score"] == f"cp {round(cp_from_q(0.2))}" and f["pv"] == "e2e4 e7e5"
        assert int(f["nps"]) == int(int(f["nodes"]) / 0.005)  # the search's own time, not the waits between lines
    session.send("stop")
    assert session.until(lambda line: line.startswith("bestmove"))[-1] == "bestmove e2e4 ponder e7e5"
    session.send("isready")
    assert session.line() == "readyok"
    assert searched == plan  # the stream repeats the last chunk's line: no search after the cap
    session.close()


def test_uci_show_wdl_off_and_go_ponder(chess_engine):
    engine, _ = chess_engine
    session = Session(lambda inp, out: UCIEngine(engine, inp, out))
    for command in ("setoption name InfoInterval value 10", "setoption name UCI_ShowWDL value maybe",
                    "position startpos", "go ponder"):
        session.send(command)
    assert session.line() == "info string error: UCI_ShowWDL must be true or false, got 'maybe'"
    lines = [session.line() for _ in range(8)]
    assert all(line.startswith("info depth ") and " wdl " not in line for line in lines)
    session.send("ponderhit")
    assert session.until(lambda line: line.startswith("bestmove"))[-1].startswith("bestmove e2e4")
    session.send("setoption name UCI_ShowWDL value false")
    session.send("go nodes 4")  # a finite search: one info line, at its end, then bestmove
    lines = session.until(lambda line: line.startswith("bestmove"))
    assert len(lines) == 2 and " nodes 4 " in lines[0] and " wdl " not in lines[0]
    session.send("isready")
    assert session.line() == "readyok"
    session.close()


def test_uci_shows_the_moves_left_heads_plies_after_wdl_when_asked_and_the_network_has_the_head(chess_engine,
                                                                                                 monkeypatch):
    engine, _ = chess_engine
    plain = engine.search

    def with_head(visits: int | None = None, child_pvs: bool | None = None) -> SearchResult:
        return dataclasses.replace(plain(visits, child_pvs), net_moves_left=41.6)

    session = Session(lambda inp, out: UCIEngine(engine, inp, out))
    session.send("uci")
    assert "option name UCI_ShowMovesLeft type check default false" in session.until(lambda line: line == "uciok")
    session.send("go nodes 4")  # off by default
    assert " movesleft " not in session.until(lambda line: line.startswith("bestmove"))[0]
    monkeypatch.setattr(engine, "search", with_head)
    for command in ("setoption name UCI_ShowMovesLeft value true", "setoption name UCI_ShowWDL value true",
                    "go nodes 4"):
        session.send(command)
    line = session.until(lambda line: line.startswith("bestmove"))[0]
    assert " movesleft 42 " in line and line.index(" wdl ") < line.index(" movesleft ") < line.index(" pv ")
    monkeypatch.setattr(engine, "search", plain)  # a network without the head: no field, whatever the option
    session.send("go nodes 4")
    assert " movesleft " not in session.until(lambda line: line.startswith("bestmove"))[0]
    session.close()


# ---------------------------------------------------------------- the pieces


def test_wdl_from_q_is_lc0_s_for_a_network_without_a_wdl_head():
    assert wdl_from_q(0.2) == (600, 0, 400) and wdl_from_q(-1.0) == (0, 0, 1000) and wdl_from_q(1.5) == (1000, 0, 0)
    for q in (-0.9995, -0.3333, 0.0, 0.0004, 0.77777):
        w, d, loss = wdl_from_q(q)
        assert w + d + loss == 1000 and d == 0 and (w - loss) / 1000 == pytest.approx(q, abs=1e-3)


def test_wdl_from_q_with_a_draw_share_keeps_q_and_caps_the_draw_at_what_q_allows():
    assert wdl_from_q(0.2, draw=0.5) == (350, 500, 150) and wdl_from_q(0.0, draw=1.0) == (0, 1000, 0)
    assert wdl_from_q(0.9, draw=0.5) == (900, 100, 0)  # a score of 0.9 leaves room for 10% draws at most
    for q, draw in ((-0.6, 0.3), (0.25, 0.05), (0.0004, 0.9), (0.77777, 0.2)):
        w, d, loss = wdl_from_q(q, draw)
        assert w + d + loss == 1000 and min(w, d, loss) >= 0
        assert d / 1000 == pytest.approx(min(draw, 1 - abs(q)), abs=1e-3)
        assert (w - loss) / 1000 == pytest.approx(q, abs=2e-3)


@pytest.mark.slow
def test_uci_shows_the_draw_probability_of_a_win_draw_loss_network(tmp_path):
    from conftest import random_params

    from azjax.checkpoint import save_config, save_params
    from azjax.config import Config
    from azjax.games import make_game

    config = Config(game="chess", num_blocks=1, num_channels=8, eval_simulations=VISITS, value_head="wdl")
    save_config(tmp_path, config)
    save_params(tmp_path, random_params(config, make_game("chess")))
    engine = Engine.from_checkpoint(str(tmp_path))
    result = engine.search(visits=VISITS)
    assert result.net_draw is not None and 0 < result.net_draw < 1
    session = Session(lambda inp, out: UCIEngine(engine, inp, out))
    for command in ("setoption name UCI_ShowWDL value true", "position startpos", f"go nodes {VISITS}"):
        session.send(command)
    info = next(line for line in session.until(lambda line: line.startswith("bestmove")) if " wdl " in line)
    w, d, loss = (int(x) for x in info_fields(info)["wdl"].split())
    assert w + d + loss == 1000 and d > 0
    assert d / 1000 == pytest.approx(min(result.net_draw, 1 - abs(result.value)), abs=2e-3)
    session.close()


def test_an_analysis_grows_to_16_times_the_visits_at_most_8192():
    assert analysis_cap(4) == 64 and analysis_cap(800) == 8192
    assert analysis_cap(10000) == 10000  # already past MAX_VISITS: no growth


def test_line_reader_sees_a_second_command_from_the_same_write():
    """The known trap: select() on the pipe after readline() misses a line the text stream has already buffered."""
    read_fd, write_fd = os.pipe()
    with open(read_fd, encoding="utf-8") as inp, open(write_fd, "w", encoding="utf-8") as writer:
        reader = LineReader(inp)
        assert not reader.wait(0.05)
        writer.write("lz-analyze 50\nname\n")
        writer.flush()
        assert reader.get() == "lz-analyze 50\n"
        assert reader.wait(5.0) and reader.get() == "name\n"
        assert not reader.wait(0.05)
        writer.close()
        assert reader.wait(5.0) and reader.get() is None
