"""azjax's engines under a GUI's clock: start-up seconds, and per move the seconds used against the time available.

    nice -n 19 python -m lab.engines.engine_clock [--chess results/models/chess_hour] \\
        [--go results/models/go_9x9_sai] [--visits 1024] [--plies 8] [--cache DIR] [--out results/engines/clock.json]

Each engine is the real program (`python -m azjax.cli uci|gtp --checkpoint ... --visits N`) as a GUI starts it, with
`--visits` above what the clocks allow (a clock searches at most `--visits`, as Leela Zero's and KataGo's do), an empty
JAX compilation cache unless `--cache` names one (the start-up then includes every compile) and
`AZJAX_LOG_COMPILES=1`, so that the compiles after the engine said it was ready are counted (they should be none).
The script is the referee: it plays the engine against itself from the start for `--plies` plies under each time
control and keeps the clock, timing each move from the command to the answer, as a GUI's clock would:

  * UCI (`azjax uci`): start-up = launch to `readyok` (`uci`, then `isready` at once); controls `movetime 1000`
    (1 s a move), 10+0 and 60+1 (seconds a side + increment, `go wtime .. btime .. winc .. binc ..`);
  * GTP (`azjax gtp`): start-up = launch to the answer of the first command that needs the engine (`boardsize`);
    controls `time_settings 0 1 1` (1 s a stone, Canadian), `time_settings 30 0 0` (30 s absolute) and
    `kgs-time_settings byoyomi 5 2 3` (5 s main, then 3 periods of 2 s), with `time_left` before each `genmove`;
  * for both, how long a running analysis takes to answer the next command: `go infinite` then `stop`, and
    `lz-analyze 50` then `name`, each interrupted after 2 s.

A move's time available is what its clock allowed it: the movetime; the mover's time left (plus, in byo-yomi, the
period); the JSON has every move and, per control, the largest share of the available time one move used and
whether a clock ran out. Writes `--out` with the command that made it, the niceness it ran at and the machine's
cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from azjax.compile_log import COMPILE_LOG_PREFIX

REPO = Path(__file__).resolve().parents[2]

WAIT = 900.0  # seconds before a missing answer ends the run (a compile on a busy CPU can take minutes)
UCI_CONTROLS = ("movetime 1000", "10+0", "60+1")
GTP_CONTROLS = ("time_settings 0 1 1", "time_settings 30 0 0", "kgs-time_settings byoyomi 5 2 3")


class Program:
    """An engine subprocess whose stdout and stderr (the compile log) are read in order, one line at a time."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, bufsize=1)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.compiles = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def until(self, done: Callable[[str], bool]) -> tuple[str, list[str]]:
        """The first line `done` accepts, and the lines before it (compile lines counted, not returned)."""
        seen = []
        while True:
            line = self.lines.get(timeout=WAIT)
            if line is None:
                raise RuntimeError(f"the engine exited: {seen[-10:]}")
            if line.startswith(COMPILE_LOG_PREFIX):
                self.compiles += 1
                continue
            if done(line):
                return line, seen
            seen.append(line)

    def close(self, quit_command: str = "quit") -> None:
        try:
            self.send(quit_command)
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def parse_control(text: str) -> tuple[float, float]:
    base, _, inc = text.partition("+")
    return float(base), float(inc or 0)


def uci_engine(checkpoint: str, visits: int, env: dict[str, str], plies: int,
               log: Callable[[str], None]) -> dict[str, Any]:
    """Start-up, the moves of a self-played game per control, and `stop` during `go infinite`."""
    argv = [sys.executable, "-m", "azjax.cli", "uci", "--checkpoint", checkpoint, "--visits", str(visits)]
    program = Program(argv, env)
    program.send("uci")
    program.until(lambda line: line == "uciok")
    uciok = time.perf_counter() - program.started
    program.send("isready")
    program.until(lambda line: line == "readyok")
    ready = time.perf_counter() - program.started
    compiles_at_startup = program.compiles
    log(f"uci: uciok after {uciok:.1f} s, readyok after {ready:.1f} s ({compiles_at_startup} compiles)")
    controls = []
    for control in UCI_CONTROLS:
        program.send("ucinewgame")
        moves: list[str] = []
        rows = []
        left = dict.fromkeys("wb", 0.0)
        base = inc = 0.0
        if not control.startswith("movetime"):
            base, inc = parse_control(control)
            left = dict.fromkeys("wb", base)
        for ply in range(plies):
            side = "wb"[ply % 2]
            program.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
            if control.startswith("movetime"):
                go, available = f"go {control}", int(control.split()[1]) / 1000
            else:
                go = (f"go wtime {int(left['w'] * 1000)} btime {int(left['b'] * 1000)} winc {int(inc * 1000)} "
                      f"binc {int(inc * 1000)}")
                available = left[side]
            t0 = time.perf_counter()
            program.send(go)
            line, before = program.until(lambda text: text.startswith("bestmove"))
            seconds = time.perf_counter() - t0
            nodes = next((int(w[w.index("nodes") + 1]) for w in (x.split() for x in reversed(before))
                          if w[:1] == ["info"] and "nodes" in w), None)
            if not control.startswith("movetime"):
                left[side] += inc - seconds
            rows.append(dict(ply=ply, seconds=round(seconds, 3), available=round(available, 3), nodes=nodes))
            if line.split()[1] == "0000":
                break
            moves.append(line.split()[1])
        controls.append(summary(control, rows, lost=min(left.values()) < 0))
        log(f"uci {control}: {controls[-1]['max_share']:.2f} of the available time at most, "
            f"{controls[-1]['seconds_used']:.1f} s over {len(rows)} moves")
    program.send("position startpos")
    program.send("go infinite")
    time.sleep(2.0)
    t0 = time.perf_counter()
    program.send("stop")
    program.until(lambda text: text.startswith("bestmove"))
    stop_seconds = time.perf_counter() - t0
    program.send("isready")
    program.until(lambda line: line == "readyok")
    program.close()
    return dict(command=argv[2:], uciok_seconds=round(uciok, 2), startup_seconds=round(ready, 2),
                compiles_at_startup=compiles_at_startup, compiles_after_readyok=program.compiles - compiles_at_startup,
                stop_after_go_infinite_seconds=round(stop_seconds, 3), controls=controls)


def gtp_reply(program: Program, cid: int) -> str:
    line, _ = program.until(lambda text: text.startswith((f"={cid}", f"?{cid}")))
    program.until(lambda text: text == "")
    if line.startswith("?"):
        raise RuntimeError(f"the engine refused a command: {line}")
    return line[len(f"={cid}"):].strip()


def gtp_engine(checkpoint: str, visits: int, env: dict[str, str], plies: int,
               log: Callable[[str], None]) -> dict[str, Any]:
    """Start-up, the moves of a self-played game per control, and `name` during `lz-analyze`."""
    argv = [sys.executable, "-m", "azjax.cli", "gtp", "--checkpoint", checkpoint, "--visits", str(visits)]
    program = Program(argv, env)
    cid = 1
    program.send(f"{cid} boardsize 9")
    gtp_reply(program, cid)
    ready = time.perf_counter() - program.started
    compiles_at_startup = program.compiles
    log(f"gtp: first answer needing the engine after {ready:.1f} s ({compiles_at_startup} compiles)")

    def command(text: str) -> str:
        nonlocal cid
        cid += 1
        program.send(f"{cid} {text}")
        return gtp_reply(program, cid)

    controls = []
    for control in GTP_CONTROLS:
        command("clear_board")
        command("komi 7.5")
        command(control)
        words = control.split()
        if words[0] == "time_settings":
            clock = {c: GoClock(float(words[1]), float(words[2]), stones=int(words[3])) for c in "bw"}
        else:  # kgs-time_settings byoyomi MAIN PERIOD PERIODS
            clock = {c: GoClock(float(words[2]), float(words[3]), periods=int(words[4])) for c in "bw"}
        rows = []
        for ply in range(plies):
            colour = "bw"[ply % 2]
            seconds_left, count = clock[colour].time_left()
            command(f"time_left {colour} {seconds_left:.3f} {count}")
            available = clock[colour].available()
            t0 = time.perf_counter()
            move = command(f"genmove {colour}")
            seconds = time.perf_counter() - t0
            clock[colour].spend(seconds)
            rows.append(dict(ply=ply, seconds=round(seconds, 3), available=round(available, 3), move=move))
        controls.append(summary(control, rows, lost=any(c.lost for c in clock.values())))
        log(f"gtp {control}: {controls[-1]['max_share']:.2f} of the available time at most, "
            f"{controls[-1]['seconds_used']:.1f} s over {len(rows)} moves")
    command("clear_board")
    cid += 1
    program.send(f"{cid} lz-analyze 50")
    program.until(lambda text: text.startswith("info move"))
    time.sleep(2.0)
    t0 = time.perf_counter()
    cid += 1
    program.send(f"{cid} name")
    program.until(lambda text: text.startswith(f"={cid}"))
    stop_seconds = time.perf_counter() - t0
    program.close()
    return dict(command=argv[2:], startup_seconds=round(ready, 2), compiles_at_startup=compiles_at_startup,
                compiles_after_first_answer=program.compiles - compiles_at_startup,
                next_command_after_lz_analyze_seconds=round(stop_seconds, 3), controls=controls)


class GoClock:
    """A referee's GTP clock for one player (seconds): `main` time, then Canadian byo-yomi (`period` for every
    `stones` stones) or Japanese (`periods` periods of `period`, one lost for each whole period a move overruns);
    absolute time where there is neither."""

    def __init__(self, main: float, period: float, stones: int = 0, periods: int = 0):
        self.main, self.period, self.stones, self.periods = main, period, stones, periods
        self.byoyomi = period > 0 and (stones > 0 or periods > 0)
        self.in_byoyomi = self.byoyomi and main <= 0
        self.period_left, self.stones_left, self.periods_left = period, stones, periods
        self.lost = False

    def time_left(self) -> tuple[float, int]:
        """`time_left`'s seconds and stones: main time and 0, the period's seconds and its stones (Canadian), or a
        period and the periods left (Japanese, KGS's convention)."""
        if not self.in_byoyomi:
            return self.main, 0
        if self.periods:
            return self.period, self.periods_left
        return self.period_left, self.stones_left

    def available(self) -> float:
        """The seconds this move can take before the clock runs out."""
        if not self.in_byoyomi:
            return self.main + (self.period if self.byoyomi else 0.0)
        return self.period if self.periods else self.period_left

    def spend(self, seconds: float) -> None:
        if not self.in_byoyomi:
            self.main -= seconds
            if self.main >= 0:
                return
            if not self.byoyomi:
                self.lost = True
                return
            seconds, self.main, self.in_byoyomi = -self.main, 0.0, True  # the overrun is the byo-yomi's
        if self.periods:
            self.periods_left -= int(seconds // self.period)
            self.lost |= self.periods_left <= 0
            return
        self.period_left -= seconds
        self.stones_left -= 1
        self.lost |= self.period_left < 0
        if self.stones_left <= 0:
            self.period_left, self.stones_left = self.period, self.stones


def summary(control: str, rows: list[dict[str, Any]], lost: bool) -> dict[str, Any]:
    shares = [r["seconds"] / r["available"] for r in rows if r["available"] > 0]
    return dict(control=control, moves=rows, seconds_used=round(sum(r["seconds"] for r in rows), 3),
                max_share=round(max(shares, default=0.0), 3), mean_share=round(sum(shares) / max(len(shares), 1), 3),
                lost_on_time=lost)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chess", default="results/models/chess_hour")
    p.add_argument("--go", default="results/models/go_9x9_sai")
    p.add_argument("--visits", type=int, default=1024, help="the engines' --visits: the most a move searches")
    p.add_argument("--plies", type=int, default=8, help="plies per time control (the engine plays both sides)")
    p.add_argument("--cache", default=None, help="a JAX compilation cache to use (default: a new, empty one)")
    p.add_argument("--out", default="results/engines/clock.json")
    args = p.parse_args(argv)
    cache = args.cache or tempfile.mkdtemp(prefix="azjax-engine-clock-")
    env = dict(os.environ, PYTHONPATH=str(REPO), AZJAX_CACHE_DIR=cache, AZJAX_LOG_COMPILES="1")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    given = argv if argv is not None else sys.argv[1:]
    out = dict(command=" ".join(["python", "-m", "lab.engines.engine_clock", *given]),
               nice=os.nice(0), cpu_count=os.cpu_count(), machine=platform.machine(),
               compile_cache="warm: " + cache if args.cache else "empty at the start",
               uci=uci_engine(args.chess, args.visits, env, args.plies, log),
               gtp=gtp_engine(args.go, args.visits, env, args.plies, log))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
