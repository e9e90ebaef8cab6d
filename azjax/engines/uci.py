"""`azjax uci`: a UCI chess engine backed by a chess checkpoint.

    azjax uci --checkpoint DIR [--visits N] [--n_scl K] [--no-tree_reuse]

Commands: uci, isready, ucinewgame, position (startpos | fen F) [moves ...], go, stop, setoption,
quit (also `d`: prints the board and FEN, as Stockfish does). Anything else answers
`info string unknown command ...`; malformed input answers `info string error: ...`; the engine
never exits on bad input.

Search and time: a search runs a fixed number of simulations per call and cannot be interrupted, so `go` runs
whole searches in a background thread. With tree reuse (the `TreeReuse` option, on by default;
`azjax.engines.engine.Engine`) a search continues the last one's tree when the position is its root or one or two
moves below it; under PUCT a visit count is the root's total, the kept visits included (KataGo's maxVisits), under
Gumbel the root's own visits start afresh over the kept subtrees of its children:

  * `go nodes N` searches N visits, rounded up to a power of two >= 8 so that few sizes are compiled
    (below the `Visits` option: at most `Visits`), at most 16 x `Visits` (an `info string` says so:
    a search's tree and time grow faster than its visits, so the ceiling follows the option a user
    sets for the hardware; `Visits` itself is at most MAX_VISITS);
  * `go` with `movetime`/`wtime`/`btime`/`winc`/`binc`/`movestogo` computes a time budget
    (movetime, or time_left / movestogo (default 30) + increment / 2, at most time_left / 2) and
    searches the largest power-of-two visit count <= `Visits` that fits, judged by the measured
    speed of earlier (already compiled) searches; before any measurement it searches `Visits`;
  * plain `go` searches `Visits`;
  * `go infinite` (or `go ponder`) searches `Visits`, then searches again with double the visits
    (up to 16 x `Visits`, at most MAX_VISITS; `azjax.engines.streaming.growing_visits`): with tree reuse each search
    grows the last one's tree to the doubled size, else each is a new tree; `info` is sent after each search; once
    the searches stop growing, the last `info`
    is sent again every `InfoInterval` milliseconds (default 1000; lc0 reports at a fixed cadence too), with its
    `time` brought up to date, until `stop` (or `ponderhit`). A search call cannot report before it ends, so
    while one runs no line comes (a finite `go` is one search, and reports once, at its end);
  * `stop` ends the search after the search call in progress and prints `bestmove` from the last
    finished search (waiting for the first one if none has finished);
  * a command that changes or reads the position or the options (`position`, `go`, `ucinewgame`,
    `setoption`, `d`) during an infinite search first stops it, as `stop` would (its `bestmove` comes
    first), instead of waiting for a `stop` that the engine could then never read.

Start-up: `uci` is answered at once, while the network loads in the background (`azjax.engines.loading`), as lc0
does; `isready` answers `readyok` once it is loaded, and the commands that need it wait for it. A load that fails
(a corrupt parameter file, or one unlike its config's network) is said once on stderr and as `info string error:
cannot load ...` to each such command (`isready` still gets its `readyok`).

After each search call:

    info depth D nodes N nps X time MS score cp C pv e2e4 e7e5 ...
    info depth D nodes N nps X time MS score cp C wdl W D L pv e2e4 e7e5 ...     (with UCI_ShowWDL true)
    info depth D ... score cp C movesleft M pv e2e4 ...    (with UCI_ShowMovesLeft true and a moves-left head)

(depth = PV length, score from the chosen move's Q with lc0's formula; nps = the visits this search added (not the
ones kept from the last) over the search's own time, without the time spent compiling a new search size; time =
since `go`; wdl = win/draw/loss per mille of the side
to move, summing to 1000, from the same Q: with a tanh or SAI value head, as lc0 reports a network without a WDL
head (no draw class: D = 0, W = 1000 (1 + Q) / 2 rounded, L = 1000 - W); with a win/draw/loss head
(`value_head="wdl"`), D is the network's draw probability at the root, capped at 1 - |Q|, and W - L stays Q; see
`lc0.wdl_from_q`) and, with `VerboseMoveStats` on, the per-move statistics table as `info string` lines in lc0's
order (most-visited last) before `bestmove`.
Options: `Visits` (spin, 1 to MAX_VISITS), `NScl` (spin, 0 = off: search-contempt node limit), `TreeReuse` (check,
default from `--tree_reuse`, on),
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

from azjax.engines.gtp import engine_streams
from azjax.engines.lc0 import SearchResult, format_table, wdl_from_q
from azjax.engines.loading import EngineLoad, EngineLoadError, LoadingFrontEnd, one_line, start_engine
from azjax.engines.streaming import MAX_INFINITE_FACTOR, MAX_VISITS, growing_visits
from azjax.games import STANDARD_FEN

if TYPE_CHECKING:  # the engine module (flax, mctx) is imported by the background load, after the handshake
    from azjax.engines.engine import Engine

INFO_INTERVAL_MS = 1000  # default of the InfoInterval option
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
                self.send("uciok")
            elif cmd == "isready":  # ready once the network is loaded; a failed load is said, and readyok still sent
                try:
                    self.load.get()
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
        if "nodes" in params:
            cap = self._max_nodes()
            if params["nodes"] > cap:
                self.send(f"info string nodes {params['nodes']} capped at {cap} (16 x Visits)")
            plan = [self._round_visits(max(params["nodes"], 1))]
        elif infinite:
            plan = growing_visits(e.visits, self._max_nodes())
        else:
            plan = [e.visits_for_time(self._time_budget(params))]
        self._stop.clear()
        self._infinite = infinite
        self._thread = threading.Thread(target=self._search_thread, args=(plan, infinite), daemon=True)
        self._thread.start()

    def _max_nodes(self) -> int:
        return min(self.engine.visits * MAX_INFINITE_FACTOR, MAX_VISITS)

    def _round_visits(self, nodes: int) -> int:
        v = 8
        while v < min(nodes, self._max_nodes()):
            v *= 2
        return min(v, self.engine.visits) if nodes <= self.engine.visits else min(v, self._max_nodes())

    def _time_budget(self, p: dict[str, int]) -> float | None:
        if "movetime" in p:
            return p["movetime"] / 1000.0
        side = "w" if self.position.to_move() == "w" else "b"
        left = p.get(f"{side}time")
        if left is None:
            return None
        inc = p.get(f"{side}inc", 0)
        budget = left / max(p.get("movestogo", 30), 1) + inc / 2
        return max(min(budget, left / 2), 1.0) / 1000.0

    def _search_thread(self, plan: list[int], infinite: bool) -> None:
        e = self.engine
        last: SearchResult | None = None
        t0 = e.clock()
        for visits in plan:
            try:
                last = e.search(visits)
            except Exception as err:  # report and fall back to any legal move
                self.send(f"info string search failed: {type(err).__name__}: {err}")
                break
            self._info(last, e.clock() - t0)
            if self._stop.is_set():
                break
        if infinite:  # the searches have stopped growing: the last info again every interval, until `stop`
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
        # r.seconds times the search alone: compiling a new search size, and loading the network, are not in it.
        nps = int((r.visits - r.reused_visits) / max(r.seconds, 1e-6))
        cp = int(round(r.cp)) if r.cp is not None else 0
        pv = " ".join(r.pv) or r.best_move
        wdl = " wdl {} {} {}".format(*wdl_from_q(r.value, r.net_draw or 0.0)) if self.show_wdl else ""  # lc0: after cp
        # lc0 sends movesleft after wdl, and only from a network with the head
        moves_left = (f" movesleft {round(r.net_moves_left)}" if self.show_moves_left and r.net_moves_left is not None
                      else "")
        self.send(f"info depth {max(len(r.pv), 1)} nodes {r.visits} nps {nps} time {int(elapsed * 1000)} "
                  f"score cp {cp}{wdl}{moves_left} pv {pv}")

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
    return 2 if load.wait() else 0
