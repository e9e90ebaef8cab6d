"""`azjax arena`: round robins and gauntlets among checkpoints, baselines and external engines.

    azjax arena runs/a:64 runs/b:64 mcts:200 random --games 20 --out_dir results/arena/x
    azjax arena runs/go9:8 "gtp:/usr/games/gnugo --mode gtp --level 1 --chinese-rules --capture-all-dead" \
        --games 10 --gauntlet
    azjax arena runs/chess:32 "uci:stockfish:skill=0,movetime=10" --games 10 --max_plies 200

Agents:
  * `PATH[:N][:key=value,...]`: a run directory or exported model searching N simulations
    (default `--simulations`, else the model's `eval_simulations`); keys `n_scl` (0 = off), `search` (puct /
    gumbel), `considered` (the Gumbel root's moves, those its sequential halving starts from), `c_scale` (how far
    its searched values outweigh the prior in the move chosen) and `certainty` (off / visited / expanded);
  * `policy:PATH`: the raw policy; `random`; `mcts:N` (rollout MCTS); `material` (chess: one ply of
    material, the move that captures the most);
  * `gtp:COMMAND ...`: a GTP program (any game whose notation it speaks; GNU Go for Go, or
    `azjax gtp --checkpoint DIR` for every game);
  * `uci:COMMAND[:key=value,...]`: a UCI chess program; keys `skill` (Stockfish's Skill Level),
    `movetime` (ms, default 100), `nodes`, `depth`; other keys are sent as `setoption`s;
  * `NAME=SPEC` names an agent explicitly (default: a short name derived from the spec).

Games: every pairing plays `--games` games (even): `--games / 2` openings, each played twice with
colours swapped ("A first" means A moves first after the opening). Openings are `--random_opening_plies
K` uniformly random legal moves (drawn once, shared by every pairing) or lines of `--openings FILE`
(one position per line, as `azjax analyze --positions`: moves in the game's notation, for chess
also a FEN, optionally followed by `moves ...`), cycled. Pairings of two JAX agents play all their
games in one jitted batch (`play_games_from`, the arena's batched loop started from the opening
positions); a pairing with an external engine plays one game at a time on the host.

Go is scored by Tromp-Taylor area rules on the final board (dead stones are not removed), so GNU Go
should run with `--chinese-rules --capture-all-dead` (it then captures dead stones before passing).
Chess games start from the standard position (odds starts: give FEN lines in `--openings`).

`--max_plies` caps a game (counted from the game start, openings included): Go is then scored by
area (Tromp-Taylor minus komi), chess and Connect Four are adjudicated draws (`unfinished`).
Games are saved under `--out_dir` (default runs/arena, which git ignores: the committed tables under
results/arena are written only when that path is given) in one collection: `games.sgf` for Go (an SGF collection,
one game tree a game), `games.pgn` for chess (one PGN game after another), `games.txt` for Connect Four (one text
record after another). Each game is named by its id `NN_A_vs_B_GGGG`: pairing NN (from 00) of agents A and B, game
GGGG (from 0000) of the pairing, in SGF's GN, PGN's GameId tag and the text's `Id:` line
(`azjax.engines.records`). The collection is written again after each pairing, so a stopped arena keeps the games
of its finished pairings. `results.json` holds every pairing (arena.MatchResult fields) and the Elo fit
(azjax.play.arena.fit_elo, anchored at the first agent, ratings with standard errors and 95% intervals = +-1.96
se). Rerun into the same `--out_dir`, an arena replaces the collection an earlier arena wrote there, whatever its
game (the results.json it belonged to is replaced too); other files, and every file under `--no_save`, are left
alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from azjax.build import game_named
from azjax.checkpoint import refuse_model_dir
from azjax.cli.args import any_int, even_games, finite_float, nonnegative_float, nonnegative_int, positive_int
from azjax.engines.external import EngineError
from azjax.engines.records import COLLECTION_SUFFIXES, collection_path, write_collection
from azjax.play.arena import Z95, MatchResult, fit_elo, round_robin_results
from azjax.play.specs import parse_agent, spec_game
from azjax.play.tournament import (
    HostPlayer,
    file_openings,
    pairing_records,
    play_pairing,
    random_openings,
    setup_openings,
    summarize_games,
)

# ---------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.games < 2 or args.games % 2:
        raise ValueError(f"--games must be a positive even number (colours alternate), got {args.games}")
    if len(args.agents) < 2:
        raise ValueError("the arena needs at least two agents")
    refuse_model_dir(args.out_dir, f"--out_dir {args.out_dir}")
    game_name = args.game
    for spec in args.agents:
        g = spec_game(spec)
        if g is not None:
            if game_name is not None and g != game_name:
                raise ValueError(f"agent {spec!r} plays {g}, not {game_name}")
            game_name = g
    if game_name is None:
        raise ValueError("give --game (no agent fixes the game)")
    agents = []
    for spec in args.agents:
        agent, _ = parse_agent(spec, game_name, args.simulations)
        agents.append(agent)
    names = [a.name for a in agents]
    for i, a in enumerate(agents):  # unique names
        if names.count(a.name) > 1:
            a.name = f"{a.name}#{names[: i + 1].count(a.name)}"
    names = [a.name for a in agents]
    if any(a.kind == "uci" for a in agents) and game_name != "chess":
        raise ValueError("UCI engines play chess only")
    game = game_named(game_name, args.komi)
    num_openings = args.games // 2
    if args.openings:
        lines = file_openings(game, args.openings, num_openings)
    elif args.random_opening_plies > 0:
        pos_lines = random_openings(game, num_openings, args.random_opening_plies, args.seed)
        lines = [" ".join(m) for m in pos_lines]
    else:
        lines = [""] * num_openings
    openings = setup_openings(game, lines)
    max_plies = args.max_plies or game.max_moves
    if args.gauntlet:
        pairs = [(0, j) for j in range(1, len(agents))]
    else:
        pairs = list(itertools.combinations(range(len(agents)), 2))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    players = {a.name: HostPlayer(a, game, args.seed + i) for i, a in enumerate(agents)}
    results: list[MatchResult] = []
    records: list[str | bytes] = []
    collection = collection_path(out_dir, game)
    t0 = time.perf_counter()
    try:
        for k, (i, j) in enumerate(pairs):
            a, b = agents[i], agents[j]
            t1 = time.perf_counter()
            games = play_pairing(game, a, b, openings, max_plies, args.seed + 1000 * k, players, args.batch_size)
            result = summarize_games(a.name, b.name, games)
            results.append(result)
            if not args.no_save:
                records += pairing_records(game, a, b, games, k)
                write_collection(collection, records)
            print(f"{result}  ({time.perf_counter() - t1:.1f}s)", flush=True)
    except EngineError as e:  # an engine that cannot start or set up a game: a usage problem
        raise ValueError(str(e)) from e
    finally:
        for p in players.values():
            p.close()
    fit = fit_elo(names, round_robin_results(results), prior_draws=args.prior_draws)
    elo = {n: dict(rating=fit.ratings[n], stderr=fit.stderr[n], low=fit.ratings[n] - Z95 * fit.stderr[n],
                   high=fit.ratings[n] + Z95 * fit.stderr[n]) for n in names}
    summary = dict(
        game=game_name, agents={a.name: a.spec for a in agents}, games_per_pairing=args.games,
        random_opening_plies=args.random_opening_plies, openings=args.openings, max_plies=max_plies,
        pairings=[r.to_dict() for r in results], elo=elo, anchor=fit.anchor, prior_draws=args.prior_draws,
        seconds=round(time.perf_counter() - t0, 1), command="azjax " + " ".join(shlex.quote(x) for x in sys.argv[1:]),
    )  # fmt: skip
    print_table(summary)
    if not args.no_save:
        removed = remove_other_collections(out_dir, collection)
        if removed:
            print(f"removed {', '.join(removed)}: an earlier arena's games")
    (out_dir / "results.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(f"wrote {out_dir / 'results.json'}" + ("" if args.no_save else f" and {collection}"))
    return summary


def remove_other_collections(out_dir: Path, kept: Path) -> list[str]:
    """Deletes the game collections in `out_dir` other than `kept` (another game's: `games.sgf` beside a chess
    arena's `games.pgn`); returns their names.

    They belong to an earlier arena whose results.json this one replaces, so left in place they would be read as
    this arena's games."""
    removed = []
    for suffix in sorted(COLLECTION_SUFFIXES.values()):
        path = out_dir / f"games{suffix}"
        if path != kept and path.is_file():
            path.unlink()
            removed.append(path.name)
    return removed


def print_table(summary: dict[str, Any]) -> None:
    elo = summary["elo"]
    width = max(len(n) for n in elo) + 2
    print(f"\n{'agent':<{width}} {'Elo':>7} {'95% CI':>17}   games  score")
    points: dict[str, float] = {n: 0.0 for n in elo}
    played: dict[str, int] = {n: 0 for n in elo}
    for p in summary["pairings"]:
        pa = p["wins"] + 0.5 * p["draws"]
        points[p["name_a"]] += pa
        points[p["name_b"]] += p["games"] - pa
        played[p["name_a"]] += p["games"]
        played[p["name_b"]] += p["games"]
    for n, e in sorted(elo.items(), key=lambda kv: -kv[1]["rating"]):
        ci = f"[{e['low']:+.0f}, {e['high']:+.0f}]"
        score = points[n] / max(played[n], 1)
        print(f"{n:<{width}} {e['rating']:+7.0f} {ci:>17}   {played[n]:5d}  {score:.3f}")
    print(f"(anchor {summary['anchor']} = 0; CI = rating +- 1.96 standard errors)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = __doc__
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("agents", nargs="+", help="agent specs (see above)")
    p.add_argument("--game", default=None, help="needed when no agent is a checkpoint")
    p.add_argument("--games", type=even_games, default=10, help="games per pairing (even)")
    p.add_argument("--gauntlet", action="store_true", help="the first agent against each other (default: round robin)")
    p.add_argument("--simulations", type=positive_int, default=None,
                   help="search budget of checkpoint agents without :N (default: each model's eval_simulations)")
    p.add_argument("--random_opening_plies", type=nonnegative_int, default=0,
                   help="K random legal first moves per opening")
    p.add_argument("--openings", default=None, help="file of opening positions, one per line")
    p.add_argument("--max_plies", type=positive_int, default=None,
                   help="cap on a game's length (default: the game's own)")
    p.add_argument("--komi", type=finite_float, default=None, help="Go: komi (default: the game's)")
    p.add_argument("--batch_size", type=positive_int, default=None,
                   help="JAX pairings: games per jitted batch (default all)")
    p.add_argument("--prior_draws", type=nonnegative_float, default=1.0,
                   help="virtual draws per pairing in the Elo fit (keeps perfect scores finite)")
    # Under the ignored runs/, not results/: a trial arena must not write into the committed tables.
    p.add_argument("--out_dir", default="runs/arena",
                   help="results.json and the games' collection go here (default runs/arena; results/... only when "
                        "given)")
    p.add_argument("--no_save", action="store_true", help="do not write the games' collection")
    p.add_argument("--seed", type=any_int, default=0)


def main(args: argparse.Namespace) -> int:
    run(args)
    return 0
