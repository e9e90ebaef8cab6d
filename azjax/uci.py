"""`azjax uci`: a UCI chess engine backed by a chess checkpoint.

    azjax uci --checkpoint DIR [--visits N] [--n_scl K]

Commands: uci, isready, ucinewgame, position (startpos | fen F) [moves ...], go, stop, setoption,
quit (also `d`: prints the board and FEN, as Stockfish does). Anything else answers
`info string unknown command ...`; malformed input answers `info string error: ...`; the engine
never exits on bad input.

Search and time: mctx searches a fixed number of simulations per call and cannot be interrupted or
resumed, so `go` runs whole searches in a background thread:

  * `go nodes N` searches N visits (N is rounded up to a power of two >= 8 below the `Visits`
    option so that few sizes are compiled; `nodes` larger than `Visits` are honoured exactly);
  * `go` with `movetime`/`wtime`/`btime`/`winc`/`binc`/`movestogo` computes a time budget
    (movetime, or time_left / movestogo (default 30) + increment / 2, at most time_left / 2) and
    searches the largest power-of-two visit count <= `Visits` that fits, judged by the measured
    speed of earlier (already compiled) searches; before any measurement it searches `Visits`;
  * plain `go` searches `Visits`;
  * `go infinite` (or `go ponder`) searches `Visits`, then keeps searching with double the visits
    (up to 16 x `Visits`), reporting `info` after each search, until `stop`;
  * `stop` ends the search after the search call in progress and prints `bestmove` from the last
    finished search (waiting for the first one if none has finished).

After each search call: `info depth D nodes N nps X time MS score cp C pv ...` (depth = PV length,
score from the chosen move's Q with lc0's formula) and, with `VerboseMoveStats` on, the per-move
statistics table as `info string` lines in lc0's order (most-visited last) before `bestmove`.
Options: `Visits` (spin), `NScl` (spin, 0 = off: search-contempt node limit), `VerboseMoveStats`
(check).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import TextIO

from azjax.engine import Engine, SearchResult, format_table
from azjax.games import STANDARD_FEN

MAX_INFINITE_FACTOR = 16


class UCIEngine:
    """A UCI server over text streams (stdin/stdout by default; tests pass StringIO/pipes)."""

    def __init__(self, engine: Engine, inp: TextIO | None = None, out: TextIO | None = None):
        if not engine.is_chess:
            raise ValueError(f"UCI is for chess; this checkpoint plays {engine.game.name}")
        self.engine = engine
        self.inp = inp if inp is not None else sys.stdin
        self.out = out if out is not None else sys.stdout
        self.verbose = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # ----- output

    def send(self, line: str) -> None:
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
            if cmd == "uci":
                self.send("id name azjax")
                self.send("id author azjax")
                self.send(f"option name Visits type spin default {self.engine.visits} min 1 max 1000000")
                self.send(f"option name NScl type spin default {self.engine.n_scl or 0} min 0 max 1000000")
                self.send("option name VerboseMoveStats type check default false")
                self.send("uciok")
            elif cmd == "isready":
                self.send("readyok")
            elif cmd == "stop":
                self.stop_search()
            elif cmd == "ucinewgame":
                self.wait_search()
                self.engine.reset()
            elif cmd == "position":
                self.wait_search()
                self.cmd_position(args)
            elif cmd == "setoption":
                self.wait_search()
                self.cmd_setoption(args)
            elif cmd == "go":
                self.wait_search()
                self.cmd_go(args)
            elif cmd == "d":
                self.wait_search()
                for row in self.engine.render().splitlines():
                    self.send(f"info string {row}")
                self.send(f"info string fen {self.engine.fen()}")
            elif cmd in ("debug", "register", "ponderhit"):
                pass
            else:
                self.send(f"info string unknown command {line}")
        except ValueError as e:
            self.send(f"info string error: {e}")
        except Exception as e:  # never die on input
            self.send(f"info string internal error: {type(e).__name__}: {e}")
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
        e = self.engine
        # Extend the current game when the new position continues it (the usual GUI pattern).
        history = e.move_history()
        if fen == e.start_fen and moves[: len(history)] == history:
            try:
                for m in moves[len(history) :]:
                    e.play(m)
            except ValueError:
                while len(e.actions) > len(history):
                    e.undo()
                raise
            return
        e.set_position(moves, fen=fen)

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
            self.engine.set_visits(_int(value, "Visits"))
        elif key in ("nscl", "n_scl"):
            self.engine.set_n_scl(_int(value, "NScl"))
        elif key == "verbosemovestats":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"VerboseMoveStats must be true or false, got {value!r}")
            self.verbose = value.lower() == "true"
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
        if e.is_over or not e.legal_moves():
            self.send("bestmove 0000")
            return
        if "nodes" in params:
            plan = [self._round_visits(max(params["nodes"], 1))]
        elif infinite:
            plan = [e.visits]
            while plan[-1] < e.visits * MAX_INFINITE_FACTOR:
                plan.append(plan[-1] * 2)
        else:
            plan = [e.visits_for_time(self._time_budget(params))]
        self._stop.clear()
        self._thread = threading.Thread(target=self._search_thread, args=(plan, infinite), daemon=True)
        self._thread.start()

    def _round_visits(self, nodes: int) -> int:
        if nodes >= self.engine.visits:
            return nodes
        v = 8
        while v < nodes:
            v *= 2
        return min(v, self.engine.visits)

    def _time_budget(self, p: dict[str, int]) -> float | None:
        if "movetime" in p:
            return p["movetime"] / 1000.0
        side = "w" if self.engine.to_move() == "w" else "b"
        left = p.get(f"{side}time")
        if left is None:
            return None
        inc = p.get(f"{side}inc", 0)
        budget = left / max(p.get("movestogo", 30), 1) + inc / 2
        return max(min(budget, left / 2), 1.0) / 1000.0

    def _search_thread(self, plan: list[int], infinite: bool) -> None:
        e = self.engine
        last: SearchResult | None = None
        t0 = time.perf_counter()
        for visits in plan:
            try:
                last = e.search(visits)
            except Exception as err:  # report and fall back to any legal move
                self.send(f"info string search failed: {type(err).__name__}: {err}")
                break
            self._info(last, time.perf_counter() - t0)
            if self._stop.is_set():
                break
        if infinite:
            self._stop.wait()
        if last is not None and self.verbose:
            for line in format_table(last, prefix="info string ", ascending=True):
                self.send(line)
        best = last.best_move if last is not None and last.best_move else e.legal_moves()[0]
        ponder = f" ponder {last.pv[1]}" if last is not None and len(last.pv) > 1 else ""
        self.send(f"bestmove {best}{ponder}")

    def _info(self, r: SearchResult, elapsed: float) -> None:
        nps = int(r.visits / max(r.seconds, 1e-6))
        cp = int(round(r.cp)) if r.cp is not None else 0
        pv = " ".join(r.pv) or r.best_move
        self.send(f"info depth {max(len(r.pv), 1)} nodes {r.visits} nps {nps} time {int(elapsed * 1000)} "
                  f"score cp {cp} pv {pv}")

    def stop_search(self) -> None:
        self._stop.set()
        self.wait_search()

    def wait_search(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what} needs an integer, got {text!r}") from None


def main(args: argparse.Namespace, inp: TextIO | None = None, out: TextIO | None = None) -> int:
    engine = Engine.from_checkpoint(args.checkpoint, visits=args.visits, n_scl=args.n_scl,
                                    search=getattr(args, "search", None), seed=getattr(args, "seed", 0))
    UCIEngine(engine, inp, out).run()
    return 0
