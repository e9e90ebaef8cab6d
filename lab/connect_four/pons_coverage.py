"""Does a Connect Four network err more on Pons' positions its own self-play never reached?

    python -m lab.connect_four.pons_coverage runs/RUN \
        policy:results/connect_four/connect_four_hour/random_openings/model \
        [results/connect_four/connect_four_hour/random_openings/model:64] \
        --out results/connect_four/connect_four_hour/random_openings/pons_coverage.json

RUN is a training run directory with the set of distinct positions its self-play wrote to the replay
(`unique_states/STEP.npz`, `azjax.train.measures.UniqueStates`; `--step`, default the newest). Each of Pons'
positions of `--sets` is set up by replaying its moves and called visited when its observation is in that set.
For each agent (`lab/connect_four/pons_benchmark.py` specs) the JSON (`--out`) holds, per set, the error rate
(a move that changes the game-theoretic result) on visited and on unvisited positions, with 95% Wilson
intervals, and the exact command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="a training run directory with unique_states/")
    p.add_argument("agents", nargs="+", help="agent specs (PATH[:N], policy:PATH)")
    p.add_argument("--step", type=int, default=None, help="the saved set of this loop step (default: the newest)")
    p.add_argument("--sets", nargs="+", default=["begin_easy", "begin_medium", "begin_hard"])
    p.add_argument("--data", help="Pons test sets (JSONL; default: the copy in azjax/data)")
    p.add_argument("--limit", type=int, default=None, help="the first N positions of each set")
    p.add_argument("--simulations", type=int, default=64, help="simulations of a PATH agent without :N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


def split_rate(errors: Any, mask: Any) -> dict[str, Any]:
    """Errors among the positions `mask` selects: count, rate and its 95% Wilson interval."""
    from azjax.play.arena import wilson_interval

    n, e = int(mask.sum()), int(errors[mask].sum())
    low, high = wilson_interval(e / n, n) if n else (float("nan"), float("nan"))
    return dict(positions=n, errors=e, error_rate=e / n if n else float("nan"), error_low=low, error_high=high)


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    import jax
    import numpy as np

    from azjax.build import game_named
    from azjax.play.benchmarks import agent_moves, grade_moves, load_pons
    from azjax.play.selfplay_stats import replay_moves
    from azjax.play.specs import require_jax_agent
    from azjax.train.measures import UNIQUE_STATES_DIR, UniqueStates

    run_dir = Path(args.run)
    saved = UniqueStates.saved_steps(run_dir)
    step = args.step if args.step is not None else (saved[-1] if saved else None)
    unique = UniqueStates.load(run_dir, step) if step is not None else None
    if unique is None:
        raise SystemExit(f"{run_dir} has no saved set of visited positions"
                         + (f" for step {step}" if step is not None else "") + f" ({UNIQUE_STATES_DIR}/STEP.npz)")
    game = game_named("connect_four")
    sets = load_pons(args.data, args.sets, args.limit)
    visited = {}
    for name, s in sets.items():
        visited[name] = unique.contains(np.asarray(replay_moves(game, s.moves).observation))
    results = []
    for spec in args.agents:
        player = require_jax_agent(spec, "connect_four", args.simulations)
        rows = []
        for name, s in sets.items():
            actions = agent_moves(game, player.agent, s.moves, jax.random.key(args.seed))
            errors = np.asarray(grade_moves(actions, s.move_scores)[0], bool)
            v = visited[name]
            rows.append(dict(set=name, positions=s.size, visited=split_rate(errors, v),
                             unvisited=split_rate(errors, ~v)))
            print(f"{player.name} {name}: visited {v.sum()}/{s.size}, errors {rows[-1]['visited']['error_rate']:.3f} "
                  f"there and {rows[-1]['unvisited']['error_rate']:.3f} elsewhere", flush=True)
        results.append(dict(agent=player.name, spec=spec, sets=rows))
    return dict(command=command, run=str(run_dir), step=step, distinct_positions=unique.total, results=results,
                grading="error: the move changes the game-theoretic result; visited: the position's observation is "
                        "among those the run's self-play wrote to its replay; 95% Wilson intervals")


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json

    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    summary = run(args, script_command(__file__, argv))
    if args.out:
        write_json(args.out, summary)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
