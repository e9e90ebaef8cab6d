"""Tree reuse on against off at an equal time per move: one model, two engines, games to the end by the rules.

    python -m lab.engines.tree_reuse_match --checkpoint results/models/go_9x9_quick --games 40 \\
        --seconds_per_move 0.25 [--komi 7.5] [--opening_plies 2] [--max_visits 4096] [--max_plies 400] \\
        [--out results/engines/tree_reuse.json]

Two `azjax.engines.engine.Engine`s share one model's config and parameters; one keeps the subtree of its last
search for the next (`tree_reuse`, lc0's and KataGo's tree reuse: `azjax/search/reuse.py`), the other searches
every move afresh. They play `--games` games in pairs: each pair starts from the same `--opening_plies` random
legal moves (uniform, no passes; seeded by `--seed` and the pair) with colours swapped between its two games, and
then each engine plays its search's best move until the game ends by its rules (Go: two passes, scored
Tromp-Taylor by pgx's rules as azjax plays them, positional superko included; a game still running at
`--max_plies` plies, or at the game's own move cap, is scored as it stands and counted as cut short).

Time per move: each side searches a fixed number of visits per move, the number its own measured speed fits in
`--seconds_per_move`, found before the first game. Calibration rounds play `--calibration_plies` plies between the
two engines (from a random opening, not counted) at trial visit counts, time every move (the first move of each
side at a new count aside: it pays a first call's costs), and set each side's count to its current one times
`TARGET` x the budget over its median move time, in steps of 8, at most `--max_visits`, until every side's median is
within [`LOW`, 1] x the budget or its count stops changing (at most `CALIBRATION_ROUNDS` rounds). Each side is timed
with its own search (a reusing search moves the kept subtree and runs in a tree with room for it), so a side whose
moves are slower gets fewer visits. The match then plays at those counts; the mean seconds a side used per move and
the moves over the budget are reported beside them.

Why not `Engine.visits_for_time` each move (the engine's own time management under GTP and UCI): it takes the
slowest time per visit measured at any count the engine has used, and keeps each count's latest time, so one search
slowed down by other load (this machine's training run) lowers the visits for the rest of the match: in a first run
of this match at 0.25 s a move the reusing side fell to 2-32 visits (mean 15) and the other to 32 (mean 33), both
using 0.06 s a move. Nor running searches until the budget is spent: without reuse a second search of a position
starts over, so only the reusing side would gain from it.

The seconds of a move are the wall time of `Engine.search` (network, search, the read-out of the root statistics
and, with reuse, moving the kept subtree) less the time the engine spent compiling searches
(`Engine.compile_seconds`); the engine's own timing of the search call alone is given too. Every count the games
use is compiled during calibration, before any game.

Under Gumbel MuZero a reusing search runs all of its visits from a fresh root over its children's kept subtrees (the
kept visits come on top); under PUCT the kept visits count toward the budget (`Engine`'s docstring). Per side the
JSON gives the visits per move (and the root's visits after the search), the mean seconds per move, the moves over
the budget, and for the reusing side the mean visits kept from the previous tree (the visits of the kept root's
children in that tree; 0 when nothing was kept), the mean nodes kept, and how often a tree was kept. The score is the
reusing engine's, with a Wilson 95% interval and the Elo difference (logistic, 400 points) with the interval mapped
from the score's (`lab/engines/engine_matches.py`'s `score_row`).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from lab.engines.engine_matches import GameResult, score_row

SIDES = ("reuse_on", "reuse_off")
CALIBRATION_ROUNDS = 5
TARGET = 0.9  # a calibration round aims a side's median move time at this share of the budget
LOW = 0.75  # ... and is done when it is within [LOW, 1] x the budget
STEP = 8  # visit counts are multiples of this (each count is a compiled search)


@dataclasses.dataclass
class SideStats:
    """One engine's moves."""

    visits: list[int] = dataclasses.field(default_factory=list)  # the visits it searched with
    root_visits: list[int] = dataclasses.field(default_factory=list)  # the root's child visits after the search
    seconds: list[float] = dataclasses.field(default_factory=list)  # wall time of the move, compiles excluded
    search_seconds: list[float] = dataclasses.field(default_factory=list)  # the engine's timed search alone
    kept_visits: list[int] = dataclasses.field(default_factory=list)  # visits under the kept root's children
    kept_nodes: list[int] = dataclasses.field(default_factory=list)  # nodes kept from the previous tree
    compile_seconds: float = 0.0  # compiles (off the clock)

    def summary(self, budget: float, reuses: bool) -> dict[str, Any]:
        n = len(self.seconds)

        def mean(xs: list[float], digits: int) -> float | None:
            return round(float(np.mean(xs)), digits) if n else None

        out: dict[str, Any] = dict(
            moves=n,
            mean_visits=mean(self.visits, 2),
            visits_histogram={str(v): c for v, c in sorted(collections.Counter(self.visits).items())},
            mean_root_visits=mean(self.root_visits, 2),
            mean_seconds=mean(self.seconds, 4),
            median_seconds=round(float(np.median(self.seconds)), 4) if n else None,
            max_seconds=round(float(np.max(self.seconds)), 4) if n else None,
            mean_search_seconds=mean(self.search_seconds, 4),
            moves_over_budget=int(sum(s > budget for s in self.seconds)),
            compile_seconds=round(self.compile_seconds, 2),
            reuses_trees=reuses,
        )
        if reuses:
            out.update(mean_kept_visits=mean(self.kept_visits, 2), mean_kept_nodes=mean(self.kept_nodes, 2),
                       moves_with_kept_tree=int(sum(k > 0 for k in self.kept_nodes)))
        return out


def kept_root_visits(kept: Any, plies: np.ndarray | None) -> int:
    """The visits of the kept root's children in the tree they were kept from: the root's visits there less its own
    one. `kept` is the engine's `KeptTree` before the search, `plies` ([1, P], -1 padded) the moves from its root."""
    if kept is None or plies is None:
        return 0
    visits = np.asarray(kept.tree.node_visits[0])
    children = np.asarray(kept.tree.children_index[0])
    node = 0
    for a in plies[0]:
        if a < 0:
            break
        node = int(children[node, int(a)])
        if node < 0:
            return 0
    return max(int(visits[node]) - 1, 0)


def timed_move(engine: Any, visits: int, stats: SideStats) -> int:
    """The engine searches its position with `visits`; the move's statistics go to `stats`. Returns the chosen
    action (the caller plays it on both engines' positions)."""
    before, compiled = engine.kept, engine.compile_seconds
    pos = engine.position
    plies = before.plies_to((pos.komi, pos.start_fen), pos.actions) if before is not None else None
    t0 = time.perf_counter()
    result = engine.search(visits)
    wall = time.perf_counter() - t0
    compile_s = engine.compile_seconds - compiled
    stats.compile_seconds += compile_s
    stats.visits.append(visits)
    stats.root_visits.append(result.visits)
    stats.seconds.append(wall - compile_s)
    stats.search_seconds.append(result.seconds)
    if engine.reuses_trees:
        inherited = engine.kept.inherited if engine.kept is not None else 0
        stats.kept_nodes.append(inherited)
        stats.kept_visits.append(kept_root_visits(before, plies) if inherited > 0 else 0)
    return result.best_action


def random_opening(game: Any, reset: Callable[[Any], None], plies: int, rng: np.random.Generator) -> list[int]:
    """`plies` uniformly random legal moves from the start (no passes in Go), as actions."""
    from azjax.engines.position import Position

    pos = Position(game)
    reset(pos)
    actions: list[int] = []
    for _ in range(plies):
        if pos.is_over:
            break
        legal = np.flatnonzero(np.asarray(pos.state.legal_action_mask))
        if game.is_go and legal.size > 1:
            legal = legal[legal != game.size * game.size]
        a = int(rng.choice(legal))
        pos.play_action(a)
        actions.append(a)
    return actions


def play(engines: dict[str, Any], visits: dict[str, int], reuse_first: bool, opening: list[int], max_plies: int,
         stats: dict[str, SideStats], reset: Callable[[Any], None]) -> Any:
    """Plays from the start plus `opening` until the game ends or has `max_plies` plies; returns the position."""
    for e in engines.values():
        reset(e.position)
        e.clear_tree()  # a new game: lc0 and KataGo start it with an empty tree too
        for a in opening:
            e.position.play_action(a)
    pos = engines["reuse_on"].position
    while not pos.is_over and len(pos.actions) < max_plies:
        mover_first = int(np.asarray(pos.state.current_player)) == int(np.asarray(pos.states[0].current_player))
        side = "reuse_on" if mover_first == reuse_first else "reuse_off"
        action = timed_move(engines[side], visits[side], stats[side])
        for e in engines.values():
            e.position.play_action(action)
    return pos


def game_result(pos: Any, reuse_first: bool, max_plies: int, spent: float) -> tuple[GameResult, bool]:
    """The reusing engine's result of a finished (or capped) game, and whether it was cut short."""
    game = pos.game
    cut = not pos.is_over or pos.cut_short
    if pos.is_over:
        first_result = pos.outcome()  # +1, 0, -1 for the first player (Go: Black)
    else:
        first_result = float(np.sign(pos.go_score())) if game.is_go else 0.0
    if game.is_go:
        margin = pos.go_score()
        reason = f"B{margin:+g}"
        if pos.is_over and not cut and np.sign(margin) != first_result:
            reason = f"superko ({reason} on the board)"
    else:
        reason = {1.0: "first player wins", -1.0: "second player wins", 0.0: "draw"}[float(first_result)]
    if cut:
        reason += f" at the {max_plies if not pos.is_over else game.max_moves}-ply cap"
    score = (1.0 + first_result) / 2 if reuse_first else (1.0 - first_result) / 2
    return GameResult(score, reuse_first, reason, len(pos.actions), round(spent, 2), list(pos.moves)), cut


def calibrate(engines: dict[str, Any], budget: float, start_visits: int, max_visits: int, plies: int,
              opening_plies: int, seed: int, reset: Callable[[Any], None],
              log: Callable[[str], None]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Each side's visits per move for `budget` seconds (see the module docstring); returns them and the rounds."""
    game = engines["reuse_on"].game
    visits = {side: min(start_visits, max_visits) for side in SIDES}
    rounds: list[dict[str, Any]] = []
    for r in range(CALIBRATION_ROUNDS):
        stats = {side: SideStats() for side in SIDES}
        rng = np.random.default_rng([seed, 1_000_000 + r])
        n = 0
        while min(len(s.seconds) for s in stats.values()) < max(plies // 2, 2):  # colours alternate by game
            play(engines, visits, n % 2 == 0, random_opening(game, reset, opening_plies, rng), plies, stats, reset)
            n += 1
        medians = {side: float(np.median(stats[side].seconds[1:])) for side in SIDES}  # no first call
        rounds.append(dict(visits=dict(visits), median_seconds={k: round(v, 4) for k, v in medians.items()},
                           moves={side: len(stats[side].seconds) for side in SIDES},
                           compile_seconds={side: round(stats[side].compile_seconds, 2) for side in SIDES}))
        log(f"calibration round {r + 1}: visits {visits}, median seconds per move {rounds[-1]['median_seconds']}")
        new = {side: int(min(max_visits, max(STEP, visits[side] * TARGET * budget / medians[side] // STEP * STEP)))
               for side in SIDES}
        if all(LOW * budget <= medians[side] <= budget or new[side] == visits[side] for side in SIDES):
            break
        visits = new
    else:
        # Out of rounds: the last counts measured that fit, else the last estimate (compiled here, off the clock).
        visits = {side: rounds[-1]["visits"][side] if rounds[-1]["median_seconds"][side] <= budget else new[side]
                  for side in SIDES}
        for side, e in engines.items():
            reset(e.position)
            e.clear_tree()
            e.search(visits[side])
    return visits, rounds


def main(argv: list[str] | None = None) -> int:
    from azjax.build import load_model
    from azjax.checkpoint import script_command, write_json
    from azjax.compile_cache import enable_compilation_cache
    from azjax.engines.engine import Engine

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default="results/models/go_9x9_quick", help="run directory or exported model")
    p.add_argument("--games", type=int, default=40, help="games (pairs share an opening, colours swapped)")
    p.add_argument("--seconds_per_move", type=float, default=0.25)
    p.add_argument("--max_visits", type=int, default=4096, help="the most visits a move may get")
    p.add_argument("--start_visits", type=int, default=64, help="the first calibration round's visits")
    p.add_argument("--calibration_plies", type=int, default=40, help="plies per calibration round (both sides)")
    p.add_argument("--opening_plies", type=int, default=2, help="random legal moves that start each pair of games")
    p.add_argument("--komi", type=float, default=None, help="Go komi (default: the game's)")
    p.add_argument("--max_plies", type=int, default=400, help="a game still running here is scored as it stands")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/engines/tree_reuse.json")
    args = p.parse_args(argv)
    if args.games < 1:
        p.error("--games must be at least 1")
    if not args.seconds_per_move > 0:
        p.error("--seconds_per_move must be positive")
    if min(args.max_visits, args.start_visits, args.max_plies, args.calibration_plies) < 1 or args.opening_plies < 0:
        p.error("--max_visits, --start_visits, --max_plies and --calibration_plies must be at least 1, "
                "--opening_plies at least 0")

    def log(line: str) -> None:
        print(line, flush=True)

    enable_compilation_cache()  # as azjax's commands do: a rerun skips compiling (AZJAX_CACHE_DIR=off: no cache)
    config, params = load_model(args.checkpoint)
    engines = {"reuse_on": Engine(config, params, visits=args.max_visits, tree_reuse=True, seed=args.seed),
               "reuse_off": Engine(config, params, visits=args.max_visits, tree_reuse=False, seed=args.seed)}
    if not engines["reuse_on"].reuses_trees:
        raise SystemExit(f"{args.checkpoint}'s search cannot reuse trees (search-contempt or SAI): nothing to compare")
    game = engines["reuse_on"].game
    if args.komi is not None and not game.is_go:
        p.error("--komi applies to Go only")
    komi = float(game.komi if args.komi is None else args.komi) if game.is_go else None

    def reset(pos: Any) -> None:
        pos.reset(komi=komi) if game.is_go else pos.reset()

    budget = args.seconds_per_move
    t0 = time.perf_counter()
    visits, rounds = calibrate(engines, budget, args.start_visits, args.max_visits, args.calibration_plies,
                               args.opening_plies, args.seed, reset, log)
    calibration = dict(rounds=rounds, visits=visits, seconds=round(time.perf_counter() - t0, 1))
    log(f"visits per move: {visits} ({calibration['seconds']} s calibrating)")

    stats = {side: SideStats() for side in SIDES}
    results: list[GameResult] = []
    cut_short = 0
    t_games = time.perf_counter()
    for g in range(args.games):
        rng = np.random.default_rng([args.seed, g // 2])
        reuse_first = g % 2 == 0
        spent_before = sum(stats["reuse_on"].seconds)
        pos = play(engines, visits, reuse_first, random_opening(game, reset, args.opening_plies, rng),
                   args.max_plies, stats, reset)
        r, cut = game_result(pos, reuse_first, args.max_plies, sum(stats["reuse_on"].seconds) - spent_before)
        results.append(r)
        cut_short += cut
        log(f"game {g + 1}: reuse-on {'first' if r.azjax_first else 'second'} scores {r.azjax_score} ({r.reason}, "
            f"{r.plies} plies); {time.perf_counter() - t_games:.0f} s so far")

    row = score_row(results)
    games_played = []
    for r in results:
        d = dataclasses.asdict(r)
        games_played.append(dict(reuse_on_first=d.pop("azjax_first"), reuse_on_score=d.pop("azjax_score"),
                                 reuse_on_seconds=d.pop("azjax_seconds"), **d))
    out = dict(
        command=script_command(__file__, argv),
        model=args.checkpoint,
        game=config.game,
        search=engines["reuse_on"].spec().kind,
        value_head=config.value_head,
        komi=komi,
        seconds_per_move=budget,
        max_visits=args.max_visits,
        opening_plies=args.opening_plies,
        max_plies=args.max_plies,
        seed=args.seed,
        score_of="reuse_on",
        **row,
        games_cut_short=cut_short,
        first_player_wins=sum((r.azjax_score == 1.0) == r.azjax_first for r in results if r.azjax_score != 0.5),
        mean_plies=round(float(np.mean([r.plies for r in results])), 1),
        match_seconds=round(time.perf_counter() - t_games, 1),
        calibration=calibration,
        reuse_on=stats["reuse_on"].summary(budget, True),
        reuse_off=stats["reuse_off"].summary(budget, False),
        games_played=games_played,
    )
    write_json(args.out, out)
    for side in SIDES:
        s = out[side]
        log(f"{side}: {s['mean_visits']} visits/move, {s['mean_seconds']} s/move"
            + (f", {s['mean_kept_visits']} visits kept/move" if side == "reuse_on" else ""))
    log(f"reuse on vs off at {budget} s/move: score {row['score']} {row['score_interval']}, Elo {row['elo_diff']} "
        f"{row['elo_diff_interval']} (+{row['wins']} ={row['draws']} -{row['losses']}), {cut_short} cut short")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
