"""`azjax uci`: a UCI chess engine backed by a chess checkpoint.

    azjax uci --checkpoint DIR [--visits N] [--n_scl K] [--no-tree_reuse]

Commands: uci, isready, ucinewgame, position (startpos | fen F) [moves ...], go, stop, setoption,
quit (also `d`: prints the board and FEN, as Stockfish does). Anything else answers
`info string unknown command ...`; malformed input answers `info string error: ...`; the engine
never exits on bad input.

Search and time: a search runs in one compiled program whose budget (visits) is an input, compiled with
everything else a game needs before `readyok` (`azjax.engines.engine.Engine.prepare`): at launch, in the background,
and again on `isready` where an option has changed what the search compiles to (`Visits`, `NScl`, `TreeReuse`,
`TwoFoldDraws`). `go` runs in a background thread. With tree reuse (the `TreeReuse` option, on by default;
`azjax.engines.engine.Engine`) a search continues the last one's tree when the position is its root or one or two
moves below it; under PUCT a visit count is the root's total, the kept visits included (KataGo's maxVisits), under
Gumbel the root's own visits start afresh over the kept subtrees of its children:

  * `go nodes N` searches N visits, at most the engine's ceiling (16 x `Visits`, at most MAX_VISITS, where
    searches keep their tree; `Visits` where they cannot; an `info string` says when N is capped);
  * `go` with `movetime`/`wtime`/`btime`/`winc`/`binc`/`movestogo` computes a time budget
    (`azjax.engines.clock.uci_budget`: movetime, or the time left over movestogo (default 30) plus three quarters
    of the increment, at most 40% of the time left, each less `MoveOverheadMs`) and searches the largest visit
    bucket (1, 2, 4, ... up to `Visits`) whose search the engine's measured speed says fits it with a quarter to
    spare (`azjax.engines.clock`); the speed is measured at start-up and after every search;
  * plain `go` searches `Visits`;
  * `go infinite` (or `go ponder`) grows the tree in chunks of at most 64 visits (`Engine.grow`), with an `info`
    after each, up to the ceiling (without tree reuse: searches afresh of doubling size, up to `Visits`); once it
    cannot grow, the last `info` is sent again every `InfoInterval` milliseconds (default 1000; lc0 reports at a
    fixed cadence too), with its `time` brought up to date, until `stop` (or `ponderhit`);
  * `stop` ends the search after the chunk in progress and prints `bestmove` from the last finished chunk
    (waiting for the first one if none has finished);
  * a command that changes or reads the position or the options (`position`, `go`, `ucinewgame`,
    `setoption`, `d`) during an infinite search first stops it, as `stop` would (its `bestmove` comes
    first), instead of waiting for a `stop` that the engine could then never read.

Start-up: `uci` is answered at once, while the network loads in the background (`azjax.engines.loading`), as lc0
does; `isready` answers `readyok` once it is loaded, and the commands that need it wait for it. A load that fails
(a corrupt parameter file, or one unlike its config's network) is said once on stderr and as `info string error:
cannot load ...` to each such command (`isready` still gets its `readyok`).

After each search call, as lc0 writes it (one line per move with `MultiPV` above 1, `multipv K` before `pv`):

    info depth D seldepth S time MS nodes N score cp C nps X pv e2e4 e7e5 ...
    info depth D seldepth S time MS nodes N score cp C wdl W D L nps X pv e2e4 e7e5 ...   (with UCI_ShowWDL true)
    info depth D ... score cp C movesleft M nps X pv e2e4 ...   (UCI_ShowMovesLeft true and a moves-left head)
    info depth D seldepth S time MS nodes N score mate 2 nps X multipv 1 pv ...   (a proven mate; MultiPV 3)

(depth = the mean depth of the tree's nodes, seldepth the deepest, as lc0 counts them; score from the move's Q with
lc0's formula, or `mate N` where the search proved the result (`azjax.engines.mate`: certainty propagation's proven
subtree, or a move that mates at once; N < 0 when the engine is mated); nps = the visits this search added (not
the ones kept from the last) over the search's own time; time = since `go`; wdl = win/draw/loss per mille of the side
to move, summing to 1000, from the same Q: with a tanh or SAI value head, as lc0 reports a network without a WDL
head (no draw class: D = 0, W = 1000 (1 + Q) / 2 rounded, L = 1000 - W); with a win/draw/loss head
(`value_head="wdl"`), D is the network's draw probability at the root, capped at 1 - |Q|, and W - L stays Q; see
`lc0.wdl_from_q`) and, with `VerboseMoveStats` on, the per-move statistics table as `info string` lines in lc0's
order (most-visited last) before `bestmove`.
Options: `Visits` (spin, 1 to MAX_VISITS), `NScl` (spin, 0 = off: search-contempt node limit), `TreeReuse` (check,
default from `--tree_reuse`, on), `MultiPV` (spin, 1 to 500: the most visited moves reported, each with its own
`info ... multipv K ... pv` line), `MoveOverheadMs` (spin, 0 to 60000, default from `--move_overhead`, 200: time
kept back from every move for the GUI's and the engine's own work around the search),
`VerboseMoveStats` (check), `UCI_ShowWDL` (check, default false), `UCI_ShowMovesLeft` (check, default false: the
plies the network's moves-left head predicts at the root, `moves_left_loss_weight`), `InfoInterval` (spin,
milliseconds between the repeated `info` lines of an analysis that has stopped growing; 10 to 60000, default 1000).
Output lines never carry control characters (echoed input is escaped).
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
from typing import TYPE_CHECKING, TextIO

from azjax.engines.clock import uci_budget
from azjax.engines.gtp import engine_streams
from azjax.engines.lc0 import SearchResult, cp_from_q, format_table, wdl_from_q
from azjax.engines.loading import EngineLoad, EngineLoadError, LoadingFrontEnd, exit_status, one_line, start_engine
from azjax.engines.streaming import MAX_VISITS
from azjax.games import STANDARD_FEN

if TYPE_CHECKING:  # the engine module (flax, mctx) is imported by the background load, after the handshake
    from azjax.engines.engine import Engine

INFO_INTERVAL_MS = 1000  # default of the InfoInterval option
MAX_MULTIPV = 500  # the MultiPV option's maximum (more than any chess position's legal moves)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class UCIEngine(LoadingFrontEnd):
    """A UCI server over text streams (stdin/stdout by default; tests pass StringIO/pipes).

    `engine` may still be loading (`EngineLoad`): `uci` answers at once, `isready` and the commands that read or
    change the position or the options wait for it.
    """

    def __init__(self, engine: Engine | EngineLoad, inp: TextIO | None = None, out: TextIO | None = None):
        super().__init__(engine)
        if self.load.defaults.game != "chess":
            raise ValueError(f"UCI is for chess; this checkpoint plays {self.load.defaults.game}")
        self.inp = inp if inp is not None else sys.stdin
        self.out = out if out is not None else sys.stdout
        self.verbose = False
        self.show_wdl = False  # UCI_ShowWDL
        self.show_moves_left = False  # UCI_ShowMovesLeft
        self.info_interval = INFO_INTERVAL_MS / 1000  # seconds (InfoInterval)
        self.multipv = 1  # MultiPV
        self.move_overhead = self.load.defaults.move_overhead  # seconds (MoveOverheadMs)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._infinite = False  # the search in progress waits for `stop`

    # ----- output

    def send(self, line: str) -> None:
        # A control character (e.g. a vertical tab in an echoed command) could read as a line break to a GUI.
        line = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), line)
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    # ----- the loop

    def run(self) -> None:
        for raw in self.inp:
            line = raw.strip()
            if not line:
                continue
            if not self.handle(line):
                break
        self.stop_search()

    def handle(self, line: str) -> bool:
        """Handles one command line; False after `quit`."""
        words = line.split()
        cmd, args = words[0], words[1:]
        try:
            if cmd == "quit":
                self.stop_search()
                return False
            if cmd == "uci":  # answered before the network is loaded, as lc0 does
                defaults = self.load.defaults
                self.send("id name azjax")
                self.send("id author azjax")
                self.send(f"option name Visits type spin default {defaults.visits} min 1 max {MAX_VISITS}")
                self.send(f"option name NScl type spin default {defaults.n_scl} min 0 max 1000000")
                self.send(f"option name TreeReuse type check default {str(defaults.tree_reuse).lower()}")
                self.send(f"option name TwoFoldDraws type check default {str(defaults.twofold_draws).lower()}")
                self.send("option name VerboseMoveStats type check default false")
                self.send("option name UCI_ShowWDL type check default false")
                self.send("option name UCI_ShowMovesLeft type check default false")
                self.send(f"option name InfoInterval type spin default {INFO_INTERVAL_MS} min 10 max 60000")
                self.send(f"option name MultiPV type spin default 1 min 1 max {MAX_MULTIPV}")
                self.send(f"option name MoveOverheadMs type spin default {round(self.move_overhead * 1000)} min 0 "
                          "max 60000")
                self.send("uciok")
            elif cmd == "isready":
                # Ready once the network is loaded and its search compiled for the options set (a failed load is
                # said, and readyok still sent). During a search the settings are those it was prepared for: at once.
                try:
                    engine = self.load.get()
                    if self._thread is None:
                        engine.prepare()
                except EngineLoadError as e:
                    self.send(f"info string error: {e}")
                self.send("readyok")
            elif cmd in ("stop", "ponderhit"):  # ponderhit: the pondered move was played; answer now
                self.stop_search()
            elif cmd == "ucinewgame":
                self.finish_search()
                self.position.reset()
                self.engine.clear_tree()
            elif cmd == "position":
                self.finish_search()
                self.cmd_position(args)
            elif cmd == "setoption":
                self.finish_search()
                self.cmd_setoption(args)
            elif cmd == "go":
                self.finish_search()
                self.cmd_go(args)
            elif cmd == "d":
                self.finish_search()
                for row in self.position.render().splitlines():
                    self.send(f"info string {row}")
                self.send(f"info string fen {self.position.fen()}")
            elif cmd in ("debug", "register"):
                pass
            else:
                self.send(f"info string unknown command {one_line(line)}")
        except ValueError as e:
            self.send(f"info string error: {one_line(str(e))}")
        except Exception as e:  # never die on input
            self.send(f"info string internal error: {one_line(f'{type(e).__name__}: {e}')}")
        return True

    # ----- commands

    def cmd_position(self, args: list[str]) -> None:
        if not args:
            raise ValueError("position needs startpos or fen")
        moves: list[str] = []
        if "moves" in args:
            i = args.index("moves")
            args, moves = args[:i], args[i + 1 :]
        if args[0] == "startpos" and len(args) == 1:
            fen = STANDARD_FEN  # UCI's startpos is the standard position, whatever the checkpoint's start
        elif args[0] == "fen" and len(args) >= 2:
            fen = " ".join(args[1:])
        else:
            raise ValueError(f"bad position command: {' '.join(args)!r}")
        pos = self.position
        # Extend the current game when the new position continues it (the usual GUI pattern).
        history = pos.move_history()
        if fen == pos.start_fen and moves[: len(history)] == history:
            try:
                for m in moves[len(history) :]:
                    pos.play(m)
            except ValueError:
                while len(pos.actions) > len(history):
                    pos.undo()
                raise
            return
        pos.set_position(moves, fen=fen)

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise ValueError("setoption name <id> [value <x>]")
        if "value" in args:
            i = args.index("value")
            name, value = " ".join(args[1:i]), " ".join(args[i + 1 :])
        else:
            name, value = " ".join(args[1:]), ""
        key = name.lower().replace(" ", "")
        if key == "visits":
            self.engine.set_visits(_int(value, "Visits", 1, MAX_VISITS))
        elif key in ("nscl", "n_scl"):
            self.engine.set_n_scl(_int(value, "NScl", 0, 1_000_000))
        elif key == "treereuse":
            self.engine.set_tree_reuse(_bool(value, "TreeReuse"))
        elif key == "twofolddraws":
            self.engine.set_twofold_draws(_bool(value, "TwoFoldDraws"))
        elif key == "verbosemovestats":
            self.verbose = _bool(value, "VerboseMoveStats")
        elif key == "uci_showwdl":
            self.show_wdl = _bool(value, "UCI_ShowWDL")
        elif key == "uci_showmovesleft":
            self.show_moves_left = _bool(value, "UCI_ShowMovesLeft")
        elif key == "infointerval":
            self.info_interval = _int(value, "InfoInterval", 10, 60000) / 1000
        elif key == "multipv":
            self.multipv = _int(value, "MultiPV", 1, MAX_MULTIPV)
        elif key in ("moveoverheadms", "moveoverhead"):
            self.move_overhead = _int(value, "MoveOverheadMs", 0, 60000) / 1000
        else:
            self.send(f"info string unknown option {name}")

    def cmd_go(self, args: list[str]) -> None:
        params: dict[str, int] = {}
        infinite = False
        i = 0
        while i < len(args):
            word = args[i]
            if word in ("infinite", "ponder"):
                infinite = True
                i += 1
            elif word in ("nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo", "depth", "mate"):
                if i + 1 >= len(args):
                    raise ValueError(f"go {word} needs a number")
                params[word] = _int(args[i + 1], word)
                i += 2
            elif word == "searchmoves":
                raise ValueError("searchmoves is not supported")
            else:
                raise ValueError(f"unknown go parameter {word!r}")
        e = self.engine
        if self.position.is_over or not self.position.legal_moves():
            self.send("bestmove 0000")
            return
        visits: int | None = None
        if "nodes" in params:
            visits = max(params["nodes"], 1)
            if visits > e.max_visits:
                self.send(f"info string nodes {visits} capped at {e.max_visits} (the engine's ceiling)")
                visits = e.max_visits
        elif not infinite:
            visits = -1  # the clock's: chosen once the search is compiled and timed (`_search_thread`)
        self._stop.clear()
        self._infinite = infinite
        self._thread = threading.Thread(target=self._search_thread, args=(visits, params), daemon=True)
        self._thread.start()

    def _time_budget(self, p: dict[str, int]) -> float | None:
        """Seconds this move's search may take (`azjax.engines.clock.uci_budget`); None without a clock."""
        side = "w" if self.position.to_move() == "w" else "b"
        left = p.get(f"{side}time")
        return uci_budget(left_s=None if left is None else left / 1000, inc_s=p.get(f"{side}inc", 0) / 1000,
                          movestogo=p.get("movestogo"),
                          movetime_s=p["movetime"] / 1000 if "movetime" in p else None, overhead_s=self.move_overhead)

    def _search_thread(self, visits: int | None, params: dict[str, int]) -> None:
        """One `go`: a search of `visits` (-1: as many as the clock allows), or an analysis (None) that grows the
        tree chunk by chunk until `stop`."""
        e = self.engine
        last: SearchResult | None = None
        t0 = e.clock()
        try:
            e.prepare()  # nothing to do after `isready`; a GUI that sent none waits for the compile here
            if visits == -1:
                visits = e.visits_for_time(self._time_budget(params))
            if visits is not None:
                last = e.search(visits, child_pvs=self.multipv)
                self._info(last, e.clock() - t0)
            else:
                while not self._stop.is_set() and (grown := e.grow(child_pvs=self.multipv)) is not None:
                    last = grown
                    self._info(last, e.clock() - t0)
        except Exception as err:  # report and fall back to any legal move
            self.send(f"info string search failed: {type(err).__name__}: {err}")
        if visits is None:  # the analysis has stopped growing: the last info again every interval, until `stop`
            while not self._stop.wait(self.info_interval):
                if last is not None:
                    self._info(last, e.clock() - t0)
        if last is not None and self.verbose:
            for line in format_table(last, prefix="info string ", ascending=True):
                self.send(line)
        best = last.best_move if last is not None and last.best_move else self.position.legal_moves()[0]
        ponder = f" ponder {last.pv[1]}" if last is not None and len(last.pv) > 1 else ""
        self.send(f"bestmove {best}{ponder}")

    def _info(self, r: SearchResult, elapsed: float) -> None:
        """lc0's info lines of a search: one, or one per move (the most visited first) with MultiPV above 1."""
        # r.seconds times the search alone: compiling, and loading the network, are not in it.
        nps = int((r.visits - r.reused_visits) / max(r.seconds, 1e-6))
        head = (f"info depth {max(round(r.depth), 1)} seldepth {max(r.seldepth, 1)} time {int(elapsed * 1000)} "
                f"nodes {r.visits}")
        if self.multipv == 1:
            self.send(f"{head} {self._score(r.value, r.mate, r)} nps {nps} pv {' '.join(r.pv) or r.best_move}")
            return
        lines = [s for s in r.stats if s.n > 0][: self.multipv] or r.stats[:1]
        for k, s in enumerate(lines, 1):
            pv = s.pv or [s.move]
            self.send(f"{head} {self._score(s.q, s.mate, r)} nps {nps} multipv {k} pv {' '.join(pv)}")

    def _score(self, q: float, mate: int | None, r: SearchResult) -> str:
        """`score cp C` (lc0's formula) or `score mate N`, then `wdl` and `movesleft` where asked, in lc0's order."""
        score = f"score mate {mate}" if mate is not None else f"score cp {int(round(cp_from_q(q)))}"
        wdl = " wdl {} {} {}".format(*wdl_from_q(q, r.net_draw or 0.0)) if self.show_wdl else ""
        # lc0 sends movesleft after wdl, and only from a network with the head
        moves_left = (f" movesleft {round(r.net_moves_left)}" if self.show_moves_left and r.net_moves_left is not None
                      else "")
        return f"{score}{wdl}{moves_left}"

    def stop_search(self) -> None:
        self._stop.set()
        self.wait_search()

    def finish_search(self) -> None:
        """Waits for the search in progress; an infinite one is stopped first (it would wait forever)."""
        if self._infinite:
            self._stop.set()
        self.wait_search()

    def wait_search(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._infinite = False


def _bool(text: str, what: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(f"{what} must be true or false, got {one_line(repr(text), 60)}")
    return text.lower() == "true"


def _int(text: str, what: str, low: int | None = None, high: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} needs an integer, got {one_line(repr(text), 60)}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{what} must be in [{low}, {high}], got {one_line(text, 60)}")
    return value


def main(args: argparse.Namespace, inp: TextIO | None = None, out: TextIO | None = None) -> int:
    load = start_engine(args, "uci")  # `uci` is answered while the network loads
    UCIEngine(load, *engine_streams(inp, out)).run()
    # At the end of input, a load still running is waited for, so a network that cannot load exits with status 2.
    return exit_status(load, process=inp is None and out is None)
