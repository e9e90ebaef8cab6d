"""`azjax gtp`'s commands for GUIs, twogtp and server bridges (issue 62) on tiny untrained models: final_status_list,
the handicap commands, loadsgf / printsgf, lz- and kata-genmove_analyze, kata-get-rules / kata-set-rules and
cputime, each with malformed input (a one-line `? ...`, the command's id echoed)."""

from __future__ import annotations

import io

import pytest
from sgfmill import sgf

from azjax.engines.engine import Engine
from azjax.engines.gtp import GTPEngine

NEW_COMMANDS = ("final_status_list", "fixed_handicap", "place_free_handicap", "set_free_handicap", "loadsgf",
                "printsgf", "lz-genmove_analyze", "kata-genmove_analyze", "kata-get-rules", "kata-set-rules",
                "cputime")


def gtp(engine: Engine, *commands: str) -> list[str]:
    """The answers to `commands` (then quit), each without its closing empty line."""
    out = io.StringIO()
    GTPEngine(engine, io.StringIO("\n".join([*commands, "quit"]) + "\n"), out).run()
    text = out.getvalue()
    assert text.endswith("\n\n")
    answers = text[:-2].split("\n\n")
    assert answers[-1] == "=" and len(answers) == len(commands) + 1
    return answers[:-1]


def one_line_error(answer: str, cid: str = "") -> bool:
    return answer.startswith(f"?{cid} ") and "\n" not in answer


@pytest.fixture(scope="module")
def go(models) -> Engine:
    return Engine.from_checkpoint(str(models["go_9x9"]))


@pytest.fixture(scope="module")
def connect_four(models) -> Engine:
    return Engine.from_checkpoint(str(models["connect_four"]))


def test_the_new_commands_are_listed_and_known(connect_four):
    r = gtp(connect_four, "list_commands", *(f"known_command {c}" for c in NEW_COMMANDS))
    listed = r[0][2:].split("\n")
    assert all(c in listed for c in NEW_COMMANDS) and len(set(listed)) == len(listed)
    assert r[1:] == ["= true"] * len(NEW_COMMANDS)


def test_go_only_commands_are_refused_for_other_games(connect_four):
    r = gtp(connect_four, "final_status_list dead", "fixed_handicap 2", "place_free_handicap 2",
            "set_free_handicap 1 2", "loadsgf x.sgf", "printsgf", "kata-get-rules", "3 kata-set-rules tromp-taylor")
    assert all(one_line_error(a) and "Go only" in a for a in r[:-1])
    assert one_line_error(r[-1], "3") and "Go only" in r[-1]


def test_final_status_list_lists_one_chain_a_line_and_refuses_a_bad_status(go):
    r = gtp(go, "clear_board", "play b C3", "play w D4", "play b C4", "play w pass", "play b J9",
            "final_status_list dead", "final_status_list ALIVE", "final_status_list seki", "5 final_status_list",
            "6 final_status_list foo", "final_status_list dead alive")
    assert r[:6] == ["="] * 6
    assert r[6] == "=" and r[8] == "="  # no ownership head: Tromp-Taylor counts every stone, none is dead
    assert r[7] == "= J9\nC4 C3\nD4"
    assert r[9] == "?5 final_status_list needs one status: alive, dead or seki"
    assert r[10] == "?6 invalid status 'foo' (alive, dead or seki)" and one_line_error(r[11])


def test_fixed_handicap_puts_the_gtp_stones_on_a_new_game_and_white_moves_next(go):
    r = gtp(go, "clear_board", "komi 0.5", "fixed_handicap 3", "showboard", "fixed_handicap 2", "undo", "komi 1.5",
            "showboard", "genmove w", "printsgf", "clear_board", "fixed_handicap 1", "7 fixed_handicap 10",
            "fixed_handicap x", "fixed_handicap", "fixed_handicap 2 3", "play b E5", "fixed_handicap 4")
    assert r[:3] == ["=", "=", "= C3 G7 C7"]
    assert r[3].count("X") == 3 and "komi 0.5, White to move" in r[3]
    assert r[4].startswith("? board not empty") and one_line_error(r[4])
    assert r[5] == "? cannot undo the setup stones (handicap): clear_board starts a new game"
    assert r[6] == "=" and r[7].count("X") == 3 and "komi 1.5, White to move" in r[7]  # a new komi keeps them
    assert r[8][:2] == "= " and r[8][2:] != ""
    root = sgf.Sgf_game.from_bytes(r[9][2:].encode()).get_root()
    assert root.get("HA") == 3 and len(root.get("AB")) == 3 and root.get("PL") == "w" and root.get("KM") == 1.5
    assert r[10] == "="
    assert r[11] == "? invalid number of stones: 1 (fixed handicaps on 9x9: 2 to 9)"
    assert r[12] == "?7 invalid number of stones: 10 (fixed handicaps on 9x9: 2 to 9)"
    assert r[13] == r[14] == r[15] == "? fixed_handicap needs the number of stones"
    assert r[16] == "=" and r[17].startswith("? board not empty")


def test_place_free_handicap_searches_the_stones_beyond_the_fixed_ones(go):
    r = gtp(go, "clear_board", "place_free_handicap 10", "showboard", "clear_board", "place_free_handicap 2",
            "clear_board", "place_free_handicap 1", "4 place_free_handicap 81", "place_free_handicap -3",
            "place_free_handicap 2", "place_free_handicap 2")
    stones = r[1][2:].split()
    assert stones[:9] == ["C3", "G7", "C7", "G3", "C5", "G5", "E3", "E7", "E5"] and len(stones) == 10
    assert len(set(stones)) == 10 and r[2].count("X") == 10 and "White to move" in r[2]
    assert r[4] == "= C3 G7"
    assert r[6] == "? invalid number of stones: 1 (2 to 80)" and r[7] == "?4 invalid number of stones: 81 (2 to 80)"
    assert r[8] == "? place_free_handicap needs the number of stones"
    assert r[9] == "= C3 G7" and r[10].startswith("? board not empty")


def test_set_free_handicap_takes_the_controllers_stones_and_refuses_a_bad_list(go):
    r = gtp(go, "clear_board", "set_free_handicap D4 e5 F6", "showboard", "set_free_handicap A1 A2", "clear_board",
            "set_free_handicap D4", "set_free_handicap D4 d4", "8 set_free_handicap D4 Z9", "set_free_handicap pass D4",
            "set_free_handicap", "showboard")
    assert r[1] == "=" and r[2].count("X") == 3 and "White to move" in r[2]
    assert r[3].startswith("? board not empty") and r[4] == "="
    assert r[5] == "? bad vertex list: 2 to 80 stones, not 1"
    assert r[6] == "? bad vertex list: repeated vertex D4"
    assert r[7].startswith("?8 bad vertex list: not a Go vertex") and one_line_error(r[7], "8")
    assert r[8] == "? bad vertex list: a pass is not a stone" and r[9] == "? bad vertex list: 2 to 80 stones, not 0"
    assert "X" not in r[10].split("\n", 2)[2]  # nothing was placed by the refused lists


def test_loadsgf_and_printsgf_move_games_in_and_out(go, tmp_path):
    game = tmp_path / "game.sgf"
    game.write_bytes(b"(;GM[1]FF[4]SZ[9]KM[0.5]HA[2]AB[cc][gg];W[ee];B[dd];W[ff])")
    (tmp_path / "big.sgf").write_bytes(b"(;SZ[19];B[dd])")
    out = tmp_path / "out.sgf"
    r = gtp(go, f"loadsgf {game}", "showboard", f"loadsgf {game} 2", "printsgf", f"printsgf {out}",
            "9 loadsgf", f"loadsgf {tmp_path / 'missing.sgf'}", f"loadsgf {tmp_path / 'big.sgf'}",
            f"loadsgf {game} 0", f"loadsgf {game} x", f"loadsgf {game} 2 3", "showboard",
            f"printsgf {tmp_path / 'no_dir' / 'x.sgf'}", "printsgf a b", f"loadsgf {tmp_path}")
    assert r[0] == "= black" and r[1].count("X") == 3 and r[1].count("O") == 2 and "komi 0.5, Black to move" in r[1]
    assert r[2] == "= black"  # the position before move 2: W E5 played
    record = sgf.Sgf_game.from_bytes(r[3][2:].encode())
    root = record.get_root()
    assert root.get("HA") == 2 and root.get("KM") == 0.5 and root.get("PL") == "w"
    assert [n.get_move() for n in record.get_main_sequence()[1:]] == [("w", (4, 4))]
    assert r[4] == "=" and out.read_bytes().decode().strip() == r[3][2:]
    assert r[5] == "?9 loadsgf needs a file name and, optionally, a move number"
    assert r[6].startswith("? cannot load file ") and "No such file" in r[6]
    assert r[7] == "? the SGF's board is 19x19; this engine plays 9x9"
    assert r[8] == "? the move number must be a positive integer, not '0'"
    assert r[9] == "? the move number must be a positive integer, not 'x'" and one_line_error(r[10])
    assert r[11].count("X") == 2 and r[11].count("O") == 1  # as `loadsgf game.sgf 2` left it: the refusals kept it
    assert r[12].startswith("? cannot write file ") and r[13] == "? printsgf takes at most a file name"
    assert r[14].startswith("? cannot load file ")


def info_visits(line: str) -> int:
    """The visits of one info line's moves, summed."""
    words = line.split()
    return sum(int(words[i + 1]) for i, w in enumerate(words) if w == "visits")


def test_genmove_analyze_streams_info_lines_then_plays_the_move(go, connect_four):
    r = gtp(go, "clear_board", "komi 7.5", "lz-genmove_analyze b 1", "5 kata-genmove_analyze interval 1 maxmoves 2",
            "lz-genmove_analyze", "showboard", "lz-genmove_analyze x", "lz-genmove_analyze b avoid D4",
            "play b pass", "play w pass", "kata-genmove_analyze b 10")
    lines = r[2].split("\n")
    assert lines[0] == "=" and lines[-1].startswith("play ") and len(lines) == 3  # 4 visits: one search
    assert lines[1].startswith("info move ") and " winrate " in lines[1] and " order 0 " in lines[1]
    assert info_visits(lines[1]) == 4
    kata = r[3].split("\n")
    assert kata[0] == "=5" and kata[-1].startswith("play ") and " utility " in kata[1] and kata[1].count("info") <= 2
    assert r[4].split("\n")[-1].startswith("play ")  # no interval: the one search's line, then the move
    moves = [a.split("\n")[-1][5:] for a in r[2:5]]
    assert r[5].count("X") + r[5].count("O") == sum(m != "pass" for m in moves) and "White to move" in r[5]
    assert r[6] == "? invalid color 'x'" and r[7] == "? avoid is not supported"
    assert r[10] == "? the game is over"
    # Connect Four (any game): the move is played and is a column
    c4 = gtp(connect_four, "clear_board", "lz-genmove_analyze b 1")
    assert c4[1].split("\n")[-1][5:] in list("1234567") and connect_four.position.moves == [c4[1][-1]]


@pytest.mark.slow
def test_genmove_analyze_grows_a_big_budget_in_three_searches_of_one_tree(models):
    e = Engine.from_checkpoint(str(models["go_9x9"]), visits=64)
    lines = gtp(e, "lz-genmove_analyze b 1")[0].split("\n")
    info = lines[1:-1]
    assert 2 <= len(info) <= 3 and info_visits(info[0]) == 16 and info_visits(info[-1]) == 64
    assert e.position.moves == [lines[-1][5:]]


def test_kata_rules_are_the_rules_played_and_only_those_are_accepted(go):
    r = gtp(go, "clear_board", "komi 7.5", "kata-get-rules", "kata-set-rules tromp-taylor",
            'kata-set-rules {"ko":"POSITIONAL","scoring":"AREA","komi":6.5}', "kata-get-rules",
            "4 kata-set-rules japanese", 'kata-set-rules {"suicide":true}', "kata-set-rules", "kata-get-rules x")
    assert r[2] == ('= {"hasButton":false,"ko":"POSITIONAL","komi":7.5,"scoring":"AREA","suicide":false,"tax":"NONE",'
                    '"whiteHandicapBonus":"0"}')
    assert r[3] == "=" and r[4] == "=" and '"komi":6.5' in r[5] and go.position.komi == 6.5
    assert r[6].startswith("?4 unsupported rules 'japanese'") and one_line_error(r[6], "4")
    assert r[7] == "? unsupported rule suicide=true: azjax plays suicide=false only"
    assert r[8].startswith("? kata-set-rules needs rules") and r[9] == "? kata-get-rules takes no arguments"


def test_cputime_is_the_process_cpu_seconds(connect_four):
    r = gtp(connect_four, "cputime", "showboard", "12 cputime")
    first, last = float(r[0][2:]), float(r[2][4:])
    assert r[0].startswith("= ") and r[2].startswith("=12 ") and 0 < first <= last
