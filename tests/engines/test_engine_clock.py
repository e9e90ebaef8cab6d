"""Engines a player can use in a GUI under a clock (issue 62): the search compiled before the clock starts
(`Engine.prepare`, nothing compiles after UCI's `readyok` or GTP's first answer), a budget that is an input of
that one program (`azjax.search.policies.visit_plan`), analysis in chunks that `stop` interrupts after at most one,
the clock's arithmetic (`azjax.engines.clock`), UCI's MultiPV, lc0's info fields and mate scores
(`azjax.engines.mate`).

The subprocess tests count compilations as `lab.reliability.compile_watch` does (JAX's backend-compile event), through
`AZJAX_LOG_COMPILES=1`, which makes `azjax` write one line per compile on stderr (`azjax.compile_log`), read
here in order with stdout.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import chess
import chess.engine
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from production_xla import production_jit
from test_engines import WAIT, Session

from azjax.compile_log import COMPILE_LOG_PREFIX
from azjax.engines.clock import (
    MOVE_OVERHEAD_S,
    SpeedModel,
    TimeSettings,
    go_moves_left,
    gtp_budget,
    pick_visits,
    uci_budget,
    visit_buckets,
)
from azjax.engines.engine import Engine
from azjax.engines.gtp import GTPEngine
from azjax.engines.mate import ProvenTree, mate_moves, root_mate_plies
from azjax.engines.uci import UCIEngine
from azjax.games import make_game
from azjax.search import SearchSpec
from azjax.search.policies import visit_plan
from azjax.search.readout import budgeted_search_statistics, search_statistics

REPO = Path(__file__).resolve().parents[2]
MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#
MATE_IN_TWO = "7k/8/6K1/8/8/8/8/6R1 w - - 0 1"  # 1. Ra1 (or Rb1 ... Re1) Kg8 2. R-8#
MATED_IN_ONE = "7k/8/6K1/8/8/8/8/R7 b - - 1 1"  # 1... Kg8 (forced) 2. Ra8#


# ---------------------------------------------------------------- the clock's arithmetic


def test_the_buckets_are_powers_of_two_then_the_engines_visits():
    assert visit_buckets(1) == (1,)
    assert visit_buckets(64) == (1, 2, 4, 8, 16, 32, 64)
    assert visit_buckets(100) == (1, 2, 4, 8, 16, 32, 64, 100)
    with pytest.raises(ValueError):
        visit_buckets(0)


def test_a_uci_move_gets_the_time_left_over_the_moves_to_go_and_most_of_the_increment_less_the_overhead():
    assert uci_budget(left_s=60.0, overhead_s=0.2) == pytest.approx(59.8 / 30)
    assert uci_budget(left_s=60.0, inc_s=2.0, overhead_s=0.2) == pytest.approx(59.8 / 30 + 1.5)
    assert uci_budget(left_s=60.0, movestogo=10, overhead_s=0.2) == pytest.approx(5.98)
    assert uci_budget(left_s=1.0, inc_s=10.0, overhead_s=0.2) == pytest.approx(0.8 * 0.4)  # never past 40% of it
    assert uci_budget(left_s=60.0, movestogo=1, overhead_s=0.2) == pytest.approx(59.8 * 0.9)  # the control's last
    assert uci_budget(left_s=0.1, overhead_s=0.2) == 0.0  # less than the overhead left: the smallest search
    assert uci_budget(left_s=None) is None  # no clock


def test_uci_movetime_is_the_whole_budget_less_the_overhead():
    assert uci_budget(left_s=60.0, movetime_s=1.0, overhead_s=0.2) == pytest.approx(0.8)
    assert uci_budget(left_s=None, movetime_s=0.1, overhead_s=0.2) == 0.0
    assert uci_budget(left_s=None, movetime_s=1.0) == pytest.approx(1.0 - MOVE_OVERHEAD_S)


def test_gtp_time_settings_are_absolute_canadian_or_no_limit_by_gtp_s_convention():
    assert TimeSettings.from_gtp(60, 0, 0) == TimeSettings("absolute", main=60)
    assert TimeSettings.from_gtp(0, 1, 1) == TimeSettings("canadian", period=1, stones=1)
    assert TimeSettings.from_gtp(600, 30, 0).kind == "none"  # byo-yomi time without stones: no limit
    assert TimeSettings.from_gtp(0, 0, 0).kind == "none"


def test_kgs_time_settings_add_japanese_byo_yomi_and_refuse_what_they_cannot_read():
    assert TimeSettings.from_kgs(["byoyomi", "300", "30", "5"]) == TimeSettings("byoyomi", 300, 30, periods=5)
    assert TimeSettings.from_kgs(["canadian", "0", "60", "25"]) == TimeSettings("canadian", 0, 60, stones=25)
    assert TimeSettings.from_kgs(["absolute", "90"]) == TimeSettings("absolute", main=90)
    assert TimeSettings.from_kgs(["none"]).kind == "none"
    assert TimeSettings.from_kgs(["byoyomi", "60", "0", "3"]) == TimeSettings("absolute", main=60)  # no periods
    for bad in ([], ["fischer", "1", "2"], ["byoyomi", "1", "2"], ["canadian", "1", "2", "2.5"], ["absolute", "-1"]):
        with pytest.raises(ValueError):
            TimeSettings.from_kgs(bad)


def test_before_any_time_left_the_clock_is_as_the_settings_start_it():
    one_second_a_stone = TimeSettings.from_gtp(0, 1, 1)
    assert gtp_budget(one_second_a_stone, None, 29, overhead_s=0.2) == pytest.approx(0.8)
    absolute = TimeSettings.from_gtp(300, 0, 0)
    assert gtp_budget(absolute, None, 30, overhead_s=0.2) == pytest.approx(299.8 / 30)
    assert gtp_budget(None, None, 30) is None and gtp_budget(TimeSettings("none"), (5.0, 0), 30) is None


def test_a_gtp_move_in_byo_yomi_gets_its_period_over_its_stones_and_in_main_time_a_share_and_one_byo_yomi_move():
    canadian = TimeSettings.from_gtp(60, 30, 10)
    assert gtp_budget(canadian, (20.0, 4), 29, overhead_s=0.2) == pytest.approx(20 / 4 - 0.2)
    assert gtp_budget(canadian, (60.0, 0), 30, overhead_s=0.2) == pytest.approx(59.8 / 30 + 3 - 0.2)
    assert gtp_budget(canadian, (0.0, 0), 30, overhead_s=0.2) == pytest.approx(30 / 10 - 0.2)  # main time over
    japanese = TimeSettings.from_kgs(["byoyomi", "60", "5", "3"])
    assert gtp_budget(japanese, (4.0, 2), 29, overhead_s=0.2) == pytest.approx(3.8)  # the period's time left
    assert gtp_budget(japanese, (60.0, 0), 30, overhead_s=0.2) == pytest.approx(59.8 / 30 + 4.8)
    assert gtp_budget(TimeSettings.from_gtp(10, 0, 0), (1.0, 0), 30, overhead_s=0.2) == pytest.approx(0.8 / 30)


def test_leela_zero_s_moves_expected_count_down_through_the_opening_then_stay():
    assert go_moves_left(9, 0) == pytest.approx(81 / 5 + 81 / 6)
    assert go_moves_left(9, 10) == pytest.approx(81 / 5 + 81 / 6 - 10)
    assert go_moves_left(9, 100) == pytest.approx(81 / 5)


def test_the_speed_model_fits_a_fixed_cost_and_the_steepest_rise_and_the_clock_takes_the_largest_bucket_that_fits():
    speed = SpeedModel()
    assert speed.predict(8) is None and pick_visits(0.01, speed, (1, 2, 4)) == 4  # nothing timed yet
    speed.observe(1, 0.10)
    assert speed.predict(8) == pytest.approx(0.8)  # one size: proportional
    speed.observe(64, 0.73)  # 10 ms a visit over a fixed 0.09 s
    speed.observe(1, 0.12)  # slower: the fastest search of the fewest visits is the fixed cost
    speed.observe(16, 0.30)  # a steeper rise (0.0133 s a visit) than the 64's: it is the one that counts
    assert speed.fit() == pytest.approx((0.1 - 0.2 / 15, 0.2 / 15))
    buckets = visit_buckets(64)
    assert pick_visits(None, speed, buckets) == 64
    assert pick_visits(1.25 * speed.predict(32), speed, buckets) == 32
    assert pick_visits(1.25 * speed.predict(32) - 1e-6, speed, buckets) == 16
    assert pick_visits(0.0, speed, buckets) == 1  # nothing fits: the smallest
    speed.observe(0, 5.0)  # nothing new searched: not a timing
    assert len(speed.samples) == 4


# ---------------------------------------------------------------- one program, the budget an input


def _linear_evaluator(params: jax.Array, states) -> tuple[jax.Array, jax.Array]:  # noqa: ANN001
    x = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32)
    y = x @ params
    return y[:, :-1], jnp.tanh(y[:, -1])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_a_search_with_its_budget_as_an_input_is_the_search_of_that_budget_bit_for_bit(kind):
    """One program of 48 simulations, run for 7 and 48, reads out what the programs compiled for 7 and 48 read out
    (mctx's own PUCT and Gumbel roots; Gumbel's plan an input)."""
    game = make_game("connect_four")
    width = int(np.prod(game.observation_shape))
    params = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (width, game.num_actions + 1))
    states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    spec = SearchSpec(kind=kind, num_simulations=48, max_num_considered_actions=4, gumbel_scale=0.0,
                      dirichlet_fraction=0.0)
    key = jax.random.key(3)
    budgeted = production_jit(lambda s, p: budgeted_search_statistics(spec, game, _linear_evaluator, params, key,
                                                                      states, s, p)[0])
    for sims in (7, 48):
        fixed = dataclasses.replace(spec, num_simulations=sims)
        want = production_jit(lambda f=fixed: search_statistics(f, game, _linear_evaluator, params, key, states))()
        got = budgeted(np.int32(sims), visit_plan(4, sims, 48))
        for name in want:
            np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=f"{name} at {sims}")


def test_the_visit_plan_is_mctx_s_table_padded_to_the_program_s_width():
    from mctx._src import seq_halving

    plan = visit_plan(4, 10, 16)
    assert plan.shape == (5, 16) and not plan[:, 10:].any()
    assert plan[:, :10].tolist() == [list(row) for row in seq_halving.get_table_of_considered_visits(4, 10)]
    with pytest.raises(ValueError):
        visit_plan(4, 17, 16)


# ---------------------------------------------------------------- mate scores


def _tree(children: dict[int, list[tuple[int, float, float]]], lower: list[float], upper: list[float],
          width: int = 3, ended: dict[tuple[int, int], float] | None = None) -> ProvenTree:
    """A proven tree from {node: [(child node or -1, reward, discount) by slot]}; unused slots are illegal."""
    n = len(lower)
    index = np.full((n, width), -1)
    rewards, discounts = np.zeros((n, width)), np.full((n, width), -1.0)
    legal = np.zeros((n, width), bool)
    for node, kids in children.items():
        for slot, (child, reward, discount) in enumerate(kids):
            index[node, slot], rewards[node, slot], discounts[node, slot] = child, reward, discount
            legal[node, slot] = True
    scan = np.full((n, width), np.nan)
    for (node, slot), reward in (ended or {}).items():
        scan[node, slot] = reward
    return ProvenTree(index, rewards, discounts, legal, np.array(lower), np.array(upper),
                      scan if ended is not None else None)


def test_a_proven_tree_takes_the_winner_s_quickest_win_and_the_loser_s_longest_defence():
    # Root (node 0): slot 0 leads to node 1, lost for the opponent, whose two defences lose in 1 more ply (node 2: a
    # mate its scan found) and in 3 (node 3 -> node 4 -> node 5, which mates at once); slot 1 mates at once; slot 2
    # is not proven.
    tree = _tree({0: [(1, 0, -1), (7, 1, 0), (-1, 0, -1)], 1: [(2, 0, -1), (3, 0, -1)], 2: [(-1, 0, -1)],
                  3: [(4, 0, -1)], 4: [(5, 0, -1)], 5: [(6, 1, 0)]},
                 lower=[1, -1, 1, 1, -1, 1, 0, 0], upper=[1, -1, 1, 1, -1, 1, 0, 0], ended={(2, 0): 1.0})
    assert root_mate_plies(tree) == {0: 5, 1: 1}  # slot 0: 1 + the longest defence (1 + 3 plies)
    assert [mate_moves(p) for p in (1, 2, 3, 5)] == [1, 1, 2, 3]
    assert [mate_moves(p) for p in (-2, -4)] == [-1, -2]
    lost = _tree({0: [(1, 0, -1)], 1: [(2, 1, 0)]}, lower=[-1, 1, 0], upper=[-1, 1, 0])
    assert root_mate_plies(lost) == {0: -2}  # the side to move is mated in one


@pytest.fixture(scope="module")
def certain_chess(models) -> Engine:  # noqa: ANN001
    """The tiny chess network (Gumbel) with Lc0's certainty propagation, scanning each expanded node's moves."""
    return Engine.from_checkpoint(str(models["chess"]), config_overrides={"eval_certainty_propagation": "expanded"},
                                  visits=64)


def _go(engine: Engine, commands: list[str]) -> list[str]:
    """The lines of a UCI session, up to the last `bestmove`."""
    session = Session(lambda inp, out: UCIEngine(engine, inp, out))
    for command in commands:
        session.send(command)
    lines = session.until(lambda line: line.startswith("bestmove"))
    session.close()
    return lines


@pytest.mark.slow
def test_a_proven_mate_is_score_mate_in_moves_and_negative_for_the_side_that_is_mated(certain_chess):
    cases = [(MATE_IN_ONE, "mate 1", "a1a8"), (MATE_IN_TWO, "mate 2", None), (MATED_IN_ONE, "mate -1", "h8g8")]
    for fen, score, move in cases:
        lines = _go(certain_chess, [f"position fen {fen}", "go nodes 64"])
        info, best = lines[-2], lines[-1].split()[1]
        assert f" score {score} " in info, (fen, info)
        if move is not None:
            assert best == move
        if score == "mate 2":  # the move played is one: every defence meets a mate in one
            board = chess.Board(fen)
            board.push_uci(best)
            for reply in list(board.legal_moves):
                board.push(reply)
                assert _mates_in_one(board), (best, reply)
                board.pop()


def _mates_in_one(board: chess.Board) -> bool:
    for move in list(board.legal_moves):
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return True
    return False


@pytest.mark.slow
def test_a_move_that_mates_at_once_is_mate_1_without_certainty_too(models):
    engine = Engine.from_checkpoint(str(models["chess"]), search="puct", visits=64)
    assert engine.spec().certainty == "off"
    engine.position.set_position([], fen=MATE_IN_ONE)
    result = engine.search(child_pvs=3)
    mating = next(s for s in result.stats if s.move == "a1a8")
    assert mating.n > 0 and mating.mate == 1
    assert all(s.mate is None for s in result.stats if s.move != "a1a8")
    assert (result.mate == 1) == (result.best_move == "a1a8")


# ---------------------------------------------------------------- UCI: lc0's info lines, MultiPV


@pytest.mark.slow
def test_python_chess_analyses_with_multipv_3_and_reads_lc0_s_fields(models):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = [sys.executable, "-m", "azjax.cli", "uci", "--checkpoint", str(models["chess"]), "--visits", "16"]
    with chess.engine.SimpleEngine.popen_uci(command, env=env, timeout=WAIT) as engine:
        assert engine.options["MultiPV"].max == 500
        board = chess.Board()
        board.push_uci("e2e4")
        infos = engine.analyse(board, chess.engine.Limit(nodes=16), multipv=3)
        assert [info["multipv"] for info in infos] == [1, 2, 3]
        moves = [info["pv"][0] for info in infos]
        assert len(set(moves)) == 3 and all(m in board.legal_moves for m in moves)
        for info in infos:
            assert info["nodes"] == 16 and info["depth"] >= 1 and info["seldepth"] >= info["depth"]
            assert info["nps"] > 0 and info["score"].relative.score() is not None
        played = engine.play(board, chess.engine.Limit(time=0.5))  # `go movetime 500`: the clock's bucket
        assert played.move in board.legal_moves


@pytest.mark.slow
def test_uci_info_lines_carry_lc0_s_fields_in_lc0_s_order(models):
    engine = Engine.from_checkpoint(str(models["chess"]))
    lines = _go(engine, ["setoption name UCI_ShowWDL value true", "position startpos", "go nodes 4"])
    words = lines[-2].split()
    order = [w for w in words if w in ("depth", "seldepth", "time", "nodes", "score", "wdl", "nps", "pv")]
    assert order == ["depth", "seldepth", "time", "nodes", "score", "wdl", "nps", "pv"]
    assert int(words[words.index("seldepth") + 1]) >= int(words[words.index("depth") + 1]) >= 1


# ---------------------------------------------------------------- analysis in chunks: stop waits for one at most


class _Chunks:
    """Wraps `engine.grow`: records each call's start and end; the second call waits, before it searches, until
    `hold` is released (the test releases it once the interrupting command is in), so that a chunk is in progress
    when it arrives."""

    def __init__(self, engine: Engine):
        self.events: list[str] = []
        self.hold = threading.Event()
        self._grow = engine.grow
        engine.grow = self  # type: ignore[method-assign]

    def __call__(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN204
        self.events.append("start")
        if self.events.count("start") == 2:
            assert self.hold.wait(WAIT)
        result = self._grow(*args, **kwargs)
        self.events.append("end")
        return result


@pytest.mark.slow
def test_uci_stop_answers_after_the_chunk_in_progress_and_starts_no_other(models):
    engine = Engine.from_checkpoint(str(models["chess"]))
    session = Session(lambda inp, out: UCIEngine(engine, inp, out))
    session.send("isready")
    assert session.line() == "readyok"  # compiled and timed (`prepare` grows trees of its own, before the count)
    chunks = _Chunks(engine)
    session.send("position startpos")
    session.send("go infinite")
    first = session.line()
    assert " nodes 4 " in first  # the first chunk: `Visits` (4) visits
    session.send("stop")
    chunks.hold.set()  # the chunk in progress when `stop` came
    lines = session.until(lambda line: line.startswith("bestmove"))
    assert chunks.events == ["start", "end", "start", "end"]  # the tree could grow to 64: no chunk after `stop`
    assert " nodes 8 " in lines[-2]
    session.close()


@pytest.mark.slow
def test_gtp_lz_analyze_answers_the_next_command_after_the_chunk_in_progress(models):
    engine = Engine.from_checkpoint(str(models["go_9x9"]))
    session = Session(lambda inp, out: GTPEngine(engine, inp, out))
    session.send("1 name")
    assert session.gtp_reply() == "=1 azjax"
    session.send("2 clear_board")  # the first command that needs the engine: it is prepared first
    assert session.gtp_reply() == "=2" and engine.prepared
    chunks = _Chunks(engine)
    session.send("3 lz-analyze 1")
    assert session.line() == "=3"
    assert session.line().startswith("info move ")
    session.send("4 name")
    chunks.hold.set()
    rest = session.until(lambda line: line == "")  # the empty line that ends the analysis
    assert all(line.startswith("info move ") for line in rest[:-1])
    assert session.gtp_reply() == "=4 azjax"
    assert chunks.events == ["start", "end", "start", "end"]
    session.close()


# ---------------------------------------------------------------- nothing compiles on the clock


class _Program:
    """`azjax COMMAND` as a subprocess with an empty compile cache, logging its compiles (AZJAX_LOG_COMPILES) into
    its stdout, in order with its answers."""

    def __init__(self, args: list[str], cache: Path):
        env = dict(os.environ, PYTHONPATH=str(REPO), AZJAX_CACHE_DIR=str(cache), AZJAX_LOG_COMPILES="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "azjax.cli", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, command: str) -> None:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def until(self, done) -> str:  # noqa: ANN001
        while True:
            line = self.lines.get(timeout=WAIT)
            assert line is not None, f"the engine exited: {self.log[-20:]}"
            self.log.append(line)
            if done(line):
                return line

    def compiles(self) -> int:
        return sum(line.startswith(COMPILE_LOG_PREFIX) for line in self.log)

    def quit(self) -> None:
        self.send("quit")
        assert self.proc.wait(timeout=WAIT) == 0, self.log[-20:]


@pytest.mark.slow
def test_azjax_uci_compiles_nothing_after_readyok_in_a_game_at_varying_time_controls(models, tmp_path):
    uci = _Program(["uci", "--checkpoint", str(models["chess"])], tmp_path / "empty_cache")
    uci.send("uci")
    uci.until(lambda line: line == "uciok")
    uci.send("isready")
    uci.until(lambda line: line == "readyok")
    before = uci.compiles()
    assert before > 0  # an empty cache: the search compiled at start-up
    clocks = ["movetime 50", "wtime 60000 btime 60000 winc 1000 binc 1000", "wtime 300 btime 300",
              "nodes 64", "wtime 5000 btime 5000 movestogo 1", "movetime 2000", "nodes 3", ""]
    moves: list[str] = []
    for i, clock in enumerate(clocks):
        if i == 3:
            uci.send("setoption name MultiPV value 3")
        uci.send("position startpos moves " + " ".join(moves) if moves else "position startpos")
        uci.send(f"go {clock}".strip())
        moves.append(uci.until(lambda line: line.startswith("bestmove")).split()[1])
    uci.send("go infinite")
    uci.until(lambda line: line.startswith("info depth"))
    uci.send("stop")
    uci.until(lambda line: line.startswith("bestmove"))
    for command in ("ucinewgame", f"position fen {MATE_IN_ONE}", "go wtime 1000 btime 1000", "d", "isready"):
        uci.send(command)
    uci.until(lambda line: line == "readyok")
    uci.quit()
    assert uci.compiles() == before, [line for line in uci.log if line.startswith(COMPILE_LOG_PREFIX)][-5:]


@pytest.mark.slow
def test_azjax_gtp_compiles_nothing_after_its_first_answer_that_needs_the_engine(models, tmp_path):
    gtp = _Program(["gtp", "--checkpoint", str(models["go_9x9"])], tmp_path / "empty_cache")
    gtp.send("1 boardsize 9")
    gtp.until(lambda line: line.startswith("=1"))
    before = gtp.compiles()
    assert before > 0
    script = ["komi 6.5", "time_settings 0 1 1", "genmove b", "play w E5", "time_left b 10 0", "genmove b",
              "kgs-time_settings byoyomi 10 1 3", "time_left w 0.8 2", "genmove w", "kgs-time_settings canadian 0 5 2",
              "genmove b", "lz-analyze 10", "name", "kata-analyze interval 10", "name", "undo", "final_score",
              "showboard", "komi 0.5", "kgs-time_settings absolute 60", "genmove b", "play w pass", "genmove b",
              "clear_board", "time_settings 30 0 0", "genmove b"]
    for i, command in enumerate(script, 2):
        gtp.send(f"{i} {command}")
        if "analyze" in command:
            gtp.until(lambda line: line.startswith("info move"))
            continue
        gtp.until(lambda line, i=i: line.startswith((f"={i}", f"?{i}")))
        assert gtp.log[-1].startswith(f"={i}"), gtp.log[-5:]
    gtp.quit()
    assert gtp.compiles() == before, [line for line in gtp.log if line.startswith(COMPILE_LOG_PREFIX)][-5:]
