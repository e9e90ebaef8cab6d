"""azjax against Stockfish and GNU Go through UCI and GTP under a clock: scores and Elo estimates with 95% intervals.

    python -m lab.engines.engine_matches --chess results/models/chess_quick --go results/models/go_9x9_quick \\
        [--go results/models/go_7x7_sai ...] \\
        [--stockfish_elo 1350 1500 1700] [--stockfish_skill 0 3] [--gnugo_levels 1 5 10] [--games 10] \\
        [--clock 60+1] [--visits 256] [--max_plies 400] [--out results/engines/matches.json]

Every player is a separate program spoken to through its protocol: azjax as `azjax uci` / `azjax gtp` subprocesses
(`python -m azjax.cli`), Stockfish (`UCI_LimitStrength` with `UCI_Elo`, or `Skill Level`) and GNU Go (`--level`,
Chinese rules, capturing all dead stones before it passes, so that the area count is the game's). A referee plays
the moves on its own board (python-chess; azjax's Go rules, Tromp-Taylor area scoring with `--komi`) and keeps
both clocks, `--clock BASE+INC` seconds a side for the game (Fischer increment):

  * UCI: `go wtime W btime B winc I binc I`; each engine manages its own time (azjax: `azjax.engines.clock`, the
    time left over 30 moves plus three quarters of the increment, at most 40% of it, in the visit bucket its
    measured speed fits);
  * GTP has no increment: `time_settings BASE 0 0` at the start and `time_left COLOUR SECONDS 0` before each
    `genmove` (azjax spreads the time left over the moves Leela Zero's estimate expects; GNU Go with its own rule);
  * the referee times each reply from the command to the answer and takes it off the mover's clock, then adds the
    increment; a clock that runs out loses the game (`time`). An illegal move or a program that fails loses too;
    chess draws by the rules (claims included) and Go's two passes end games; at `--max_plies` a chess game is a
    draw and a Go game is scored as it stands.

azjax's engines compile their one search at start-up, before `readyok` or the first GTP answer that needs the engine,
and every visit count a clock picks runs in it: nothing compiles on a clock.

Colours alternate (azjax has White/Black in even games). Per opponent: wins, draws, losses, the score with its
Wilson 95% interval and the Elo difference (logistic, 400 points) with the interval mapped from the score's. Against
Stockfish's `UCI_Elo` levels (its own calibration: CCRL 40/4 Elo) the games also give azjax an anchored Elo, the
maximum-likelihood rating over all those games with a likelihood-ratio 95% interval (draws count half a win and
half a loss). Writes the JSON to `--out` with the command that made it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from azjax.play.arena import elo_from_score, wilson_interval

GNUGO_FLAGS = ("--mode", "gtp", "--chinese-rules", "--capture-all-dead")
CHI2_95 = 3.841  # the 95% quantile of chi-square with one degree of freedom: the likelihood-ratio interval


@dataclasses.dataclass
class Clock:
    """Both sides' time left in a game with a Fischer increment (seconds)."""

    base: float
    increment: float
    left: dict[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.left = {"w": self.base, "b": self.base}

    def spend(self, side: str, seconds: float) -> bool:
        """Takes a move's time off `side`'s clock; False if its time ran out (the increment comes after the move)."""
        self.left[side] -= seconds
        if self.left[side] < 0:
            return False
        self.left[side] += self.increment
        return True


def parse_clock(text: str) -> tuple[float, float]:
    """`60+1` -> (60.0, 1.0); `60` -> (60.0, 0.0)."""
    base, _, inc = text.partition("+")
    base_s, inc_s = float(base), float(inc or 0)
    if not (base_s > 0 and inc_s >= 0 and math.isfinite(base_s + inc_s)):
        raise argparse.ArgumentTypeError(f"a clock is BASE+INC seconds with BASE > 0, got {text!r}")
    return base_s, inc_s


@dataclasses.dataclass
class GameResult:
    azjax_score: float  # 1, 0.5 or 0
    azjax_first: bool  # azjax had White (chess) or Black (Go)
    reason: str
    plies: int
    azjax_seconds: float  # azjax's thinking time in the game
    moves: list[str]


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.monotonic()
    out = call()
    return out, time.monotonic() - t0


# ---------------------------------------------------------------- chess over UCI


def chess_game(azjax: Any, opponent: Any, azjax_white: bool, clock: Clock, max_plies: int) -> GameResult:
    """One game from the standard start; the clients are `azjax.engines.external.UCIClient`s."""
    import chess

    from azjax.engines.external import EngineError

    board = chess.Board()
    moves: list[str] = []
    spent = 0.0
    for client in (azjax, opponent):
        client.new_game()
    reason, azjax_score = "", 0.5
    while board.outcome(claim_draw=True) is None and len(moves) < max_plies:
        side = "w" if board.turn == chess.WHITE else "b"
        is_azjax = (side == "w") == azjax_white
        client = azjax if is_azjax else opponent
        ms = {"wtime": 1000 * clock.left["w"], "btime": 1000 * clock.left["b"], "winc": 1000 * clock.increment,
              "binc": 1000 * clock.increment}
        try:
            (move, _), seconds = _timed(lambda c=client, ms=ms: c.bestmove(moves, clock=ms))
        except EngineError as e:
            reason, azjax_score = f"failed: {e}", 0.0 if is_azjax else 1.0
            break
        spent += seconds if is_azjax else 0.0
        if not clock.spend(side, seconds):
            reason, azjax_score = "time", 0.0 if is_azjax else 1.0
            break
        try:
            board.push_uci(move)
        except ValueError:
            reason, azjax_score = f"illegal move {move!r}", 0.0 if is_azjax else 1.0
            break
        moves.append(move)
    if not reason:
        outcome = board.outcome(claim_draw=True)
        if outcome is None:
            reason = f"draw at the {max_plies}-ply cap"
        else:
            reason = outcome.termination.name.lower()
            if outcome.winner is not None:
                azjax_score = 1.0 if outcome.winner == (chess.WHITE if azjax_white else chess.BLACK) else 0.0
    return GameResult(azjax_score, azjax_white, reason, len(moves), round(spent, 2), moves)


# ---------------------------------------------------------------- Go over GTP


def go_game(azjax: Any, opponent: Any, game: Any, komi: float, azjax_black: bool, clock: Clock,
            max_plies: int) -> GameResult:
    """One game on an empty board; the clients are `azjax.engines.external.GTPClient`s, `game` azjax's Go."""
    from azjax.engines.external import EngineError
    from azjax.engines.position import Position

    pos = Position(game)
    pos.reset(komi=komi)
    for client in (azjax, opponent):
        client.command(f"boardsize {game.size}")
        client.command("clear_board")
        client.command(f"komi {komi:g}")
        client.command(f"time_settings {int(clock.base)} 0 0")
    spent = 0.0
    reason, azjax_score = "", None
    while not pos.is_over and len(pos.moves) < max_plies:
        side = pos.to_move()
        is_azjax = (side == "b") == azjax_black
        client, other = (azjax, opponent) if is_azjax else (opponent, azjax)
        try:
            client.command(f"time_left {side} {max(int(clock.left[side]), 0)} 0")
            reply, seconds = _timed(lambda c=client, s=side: c.command(f"genmove {s}", timeout=300.0 + clock.base))
        except EngineError as e:
            reason, azjax_score = f"failed: {e}", 0.0 if is_azjax else 1.0
            break
        spent += seconds if is_azjax else 0.0
        if not clock.spend(side, seconds):
            reason, azjax_score = "time", 0.0 if is_azjax else 1.0
            break
        if reply.strip().lower() == "resign":
            reason, azjax_score = "resign", 0.0 if is_azjax else 1.0
            break
        try:
            pos.play(game.move_from_gtp(reply.strip()))
            other.command(f"play {side} {reply.strip()}")
        except (ValueError, EngineError) as e:
            reason, azjax_score = f"illegal move {reply!r}: {e}", 0.0 if is_azjax else 1.0
            break
    if azjax_score is None:  # two passes, or the ply cap: Tromp-Taylor area count minus komi
        margin = pos.go_score()
        reason = f"B{margin:+g}" if pos.is_over else f"B{margin:+g} at the {max_plies}-ply cap"
        azjax_score = 0.5 if margin == 0 else float((margin > 0) == azjax_black)
    return GameResult(azjax_score, azjax_black, reason, len(pos.moves), round(spent, 2), list(pos.moves))


# ---------------------------------------------------------------- Elo


def score_row(results: list[GameResult], clock: tuple[float, float] | None = None) -> dict[str, Any]:
    """Wins, draws, losses, the score with its Wilson 95% interval and the Elo difference with its interval; with a
    `clock` (base, increment seconds), how much of it azjax used (`clock_used`: its thinking time over base +
    increments of its moves, the mean over games), which says whether the clock or the visit cap bounded its search."""
    n = len(results)
    wins = sum(r.azjax_score == 1.0 for r in results)
    draws = sum(r.azjax_score == 0.5 for r in results)
    score = (wins + 0.5 * draws) / n
    low, high = wilson_interval(score, n)
    return dict(games=n, wins=wins, draws=draws, losses=n - wins - draws, score=round(score, 4),
                score_interval=[round(low, 4), round(high, 4)], elo_diff=round(elo_from_score(score), 1),
                elo_diff_interval=[round(elo_from_score(low), 1), round(elo_from_score(high), 1)],
                **({} if clock is None else {"clock_used": round(sum(map(_clock_share, results, [clock] * n)) / n, 4)}))


def _clock_share(r: GameResult, clock: tuple[float, float]) -> float:
    """azjax's thinking time over its clock's base plus the increments of its moves."""
    return r.azjax_seconds / (clock[0] + clock[1] * ((r.plies + r.azjax_first) // 2))


def anchored_elo(games: list[tuple[float, float]]) -> dict[str, Any] | None:
    """The maximum-likelihood Elo of a player from (opponent's Elo, score) games, with the likelihood-ratio 95%
    interval; None without games. A grid of 1 Elo over the anchors' range +- 1500 (a player who wins or loses
    everything has its estimate at the grid's edge: the interval then says how far it is known)."""
    if not games:
        return None
    opponents = np.array([g[0] for g in games], np.float64)
    scores = np.array([g[1] for g in games], np.float64)
    grid = np.arange(opponents.min() - 1500, opponents.max() + 1501, 1.0)
    p = 1.0 / (1.0 + 10.0 ** ((opponents[None, :] - grid[:, None]) / 400.0))  # [grid, games]
    loglik = (scores * np.log(p) + (1 - scores) * np.log1p(-p)).sum(axis=1)
    best = int(np.argmax(loglik))
    inside = grid[loglik >= loglik[best] - CHI2_95 / 2]
    return dict(elo=float(grid[best]), interval=[float(inside.min()), float(inside.max())], games=len(games))


# ---------------------------------------------------------------- main


def azjax_command(kind: str, checkpoint: str, visits: int | None, tree_reuse: bool) -> list[str]:
    argv = [sys.executable, "-m", "azjax.cli", kind, "--checkpoint", checkpoint]
    if visits:
        argv += ["--visits", str(visits)]
    return argv + ([] if tree_reuse else ["--no-tree_reuse"])


def run_chess(args: argparse.Namespace, log: Callable[[str], None]) -> list[dict[str, Any]]:
    from azjax.engines.external import UCIClient

    rows = []
    opponents = [("UCI_Elo", elo, {"UCI_LimitStrength": "true", "UCI_Elo": elo}) for elo in args.stockfish_elo]
    opponents += [("Skill Level", skill, {"Skill Level": skill}) for skill in args.stockfish_skill]
    if not opponents:
        return rows
    azjax = UCIClient(azjax_command("uci", args.chess, args.visits, args.tree_reuse), name="azjax", timeout=600.0)
    try:
        azjax.bestmove([], movetime_ms=100)  # compiles the search of its visits before any clock runs
        for setting, value, options in opponents:
            opponent = UCIClient([args.stockfish], options=options, name=f"stockfish {setting} {value}")
            try:
                results = []
                for g in range(args.games):
                    r = chess_game(azjax, opponent, g % 2 == 0, Clock(*args.clock), args.max_plies)
                    log(f"chess vs stockfish {setting}={value} game {g + 1}: azjax {r.azjax_score} ({r.reason}, "
                        f"{r.plies} plies)")
                    results.append(r)
            finally:
                opponent.close()
            rows.append(dict(game="chess", model=args.chess, opponent="stockfish", setting=setting, value=value,
                             **score_row(results, args.clock), games_played=[dataclasses.asdict(r) for r in results]))
    finally:
        azjax.close()
    return rows


def run_go(args: argparse.Namespace, model: str, log: Callable[[str], None]) -> list[dict[str, Any]]:
    from azjax.build import board_game
    from azjax.checkpoint import load_config
    from azjax.engines.external import GTPClient

    rows: list[dict[str, Any]] = []
    if not args.gnugo_levels:
        return rows
    config = load_config(model)
    game = board_game(config)
    if not game.is_go:
        raise SystemExit(f"--go needs a Go checkpoint, not {config.game}")
    komi = float(game.komi if args.komi is None else args.komi)
    azjax = GTPClient(azjax_command("gtp", model, args.visits, args.tree_reuse), name="azjax", timeout=600.0)
    try:
        azjax.command(f"boardsize {game.size}")
        azjax.command("genmove b", timeout=600.0)  # compiles the search before any clock runs
        for level in args.gnugo_levels:
            opponent = GTPClient([args.gnugo, *GNUGO_FLAGS, "--level", str(level)], name=f"gnugo level {level}")
            try:
                results = []
                for g in range(args.games):
                    r = go_game(azjax, opponent, game, komi, g % 2 == 0, Clock(*args.clock), args.max_plies)
                    log(f"go vs gnugo level {level} game {g + 1}: azjax {r.azjax_score} ({r.reason}, {r.plies} plies)")
                    results.append(r)
            finally:
                opponent.close()
            rows.append(dict(game=config.game, model=model, komi=komi, opponent="gnugo", setting="level", value=level,
                             **score_row(results, args.clock), games_played=[dataclasses.asdict(r) for r in results]))
    finally:
        azjax.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chess", help="chess checkpoint or exported model (plays Stockfish)")
    p.add_argument("--go", action="append", default=[],
                   help="Go checkpoint or exported model (plays GNU Go); repeatable: 7x7 and 9x9 in one file")
    p.add_argument("--stockfish_elo", type=int, nargs="*", default=[1350, 1500, 1700])
    p.add_argument("--stockfish_skill", type=int, nargs="*", default=[0])
    p.add_argument("--gnugo_levels", type=int, nargs="*", default=[1, 5, 10])
    p.add_argument("--games", type=int, default=10, help="games per opponent (colours alternate)")
    p.add_argument("--clock", type=parse_clock, default=(60.0, 1.0), help="BASE+INC seconds a side (default 60+1)")
    p.add_argument("--visits", type=int, default=None, help="azjax's visits per move at most (default: the config's)")
    p.add_argument("--tree_reuse", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--komi", type=float, default=None, help="Go komi (default: the game's)")
    p.add_argument("--max_plies", type=int, default=400)
    p.add_argument("--stockfish", default="/usr/games/stockfish")
    p.add_argument("--gnugo", default="/usr/games/gnugo")
    p.add_argument("--out", default="results/engines/matches.json")
    args = p.parse_args(argv)
    if not (args.chess or args.go):
        p.error("give --chess and/or --go")
    if args.games < 1:
        p.error("--games must be at least 1")

    def log(line: str) -> None:
        print(line, flush=True)

    rows = (run_chess(args, log) if args.chess else []) + [row for model in args.go for row in run_go(args, model, log)]
    anchored = anchored_elo([(row["value"], r["azjax_score"]) for row in rows if row["setting"] == "UCI_Elo"
                             for r in row["games_played"]])
    write_json(args.out, dict(command=script_command(__file__, argv), clock=dict(base_s=args.clock[0],
                              increment_s=args.clock[1]), visits=args.visits, tree_reuse=args.tree_reuse,
                              max_plies=args.max_plies, rows=rows, chess_elo_anchored_on_stockfish_uci_elo=anchored))
    for row in rows:
        log(f"{row['game']} vs {row['opponent']} {row['setting']} {row['value']}: score {row['score']} "
            f"{row['score_interval']}, Elo difference {row['elo_diff']} {row['elo_diff_interval']}; azjax used "
            f"{row['clock_used']:.0%} of its clock")
    if anchored:
        log(f"chess Elo anchored on Stockfish's UCI_Elo: {anchored['elo']:.0f} {anchored['interval']}")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
