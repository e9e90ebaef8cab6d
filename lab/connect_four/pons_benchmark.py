"""Grades Connect Four players on Pascal Pons' six test sets (error rates as AlphaZero.jl reports them).

    python -m lab.connect_four.pons_benchmark results/models/connect_four_quick:64
    python -m lab.connect_four.pons_benchmark results/models/connect_four_quick:256:search=puct \\
        policy:results/models/connect_four_quick mcts:1000 --out results/connect_four/pons_benchmark.json

Agents are `azjax arena` specs (`azjax.play.specs.parse_agent`): `PATH[:N][:search=puct|gumbel,n_scl=K]` a run
directory or exported model searching N simulations (default `--simulations`), `policy:PATH` the raw
network policy (no search), `mcts:N` rollout MCTS, `random`.

Every position of a set is set up on device by replaying its moves (`azjax.play.selfplay_stats.replay_moves`)
and the agent moves in all of them in one batch (`--batch_size` splits a set). A move is an error when
it changes the game-theoretic result (`azjax.play.benchmarks.grade_moves`); the JSON (`--out`) holds, per
agent and set, the positions, errors, the error rate with its 95% Wilson interval, the same for
not-optimal moves, the errors split by the position's perfect-play result (`by_result`: won, drawn, lost),
and the exact command.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    from azjax.play.benchmarks import PONS_SETS

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("agents", nargs="+", help="agent specs (PATH[:N][:search=...], policy:PATH, mcts:N, random)")
    p.add_argument("--simulations", type=int, default=64, help="simulations of a PATH agent without :N")
    p.add_argument("--data", help="Pons test sets (JSONL; default: the copy in azjax/data)")
    p.add_argument("--sets", nargs="+", default=list(PONS_SETS), choices=PONS_SETS)
    p.add_argument("--limit", type=int, default=None, help="grade only the first K positions of each set")
    p.add_argument("--batch_size", type=int, default=None, help="positions per batch (default: a whole set)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/connect_four/pons_benchmark.json")
    return p


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    import jax

    from azjax.build import game_named as base_game
    from azjax.compile_cache import enable_compilation_cache
    from azjax.play.benchmarks import grade_agent, load_pons
    from azjax.play.specs import require_jax_agent

    if not jax.config.jax_compilation_cache_dir:  # keep a cache the caller (e.g. the tests) set up
        enable_compilation_cache()
    t_start = time.time()
    sets = load_pons(args.data, args.sets, args.limit)
    game = base_game("connect_four")
    results = []
    for spec in args.agents:
        player = require_jax_agent(spec, "connect_four", args.simulations)
        rows = []
        for pons_set in sets.values():
            # Common random numbers: every agent sees the same key on a set.
            grade = grade_agent(game, player.agent, pons_set, jax.random.key(args.seed), args.batch_size)
            print(f"{player.name}: {grade}", flush=True)
            rows.append(grade.to_dict())
        results.append(dict(agent=player.name, spec=spec, sets=rows))
    return dict(
        command=command,
        args=vars(args),
        grading=("error: sign(score of the move) != sign(best score), i.e. the move changes the game-theoretic "
                 "result (AlphaZero.jl's table); not optimal: score of the move < best score; illegal moves are "
                 "both; intervals are 95% Wilson intervals"),
        results=results,
        seconds=round(time.time() - t_start, 1),
        devices=[str(d) for d in jax.devices()],
    )


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    summary = run(args, script_command(__file__, argv))
    print()
    print(f"{'agent':<40} " + " ".join(f"{s:>14}" for s in args.sets))
    for r in summary["results"]:
        print(f"{r['agent']:<40} " + " ".join(f"{100 * s['error_rate']:13.1f}%" for s in r["sets"]))
    write_json(args.out, summary)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
