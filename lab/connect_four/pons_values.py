"""Does a Connect Four network's value, and the q its self-play search gives value targets, know the
game-theoretic result of Pons' positions?

    python -m lab.connect_four.pons_values results/models/connect_four_hour [MORE_MODELS ...] [--search] \
        [--sets begin_hard ...] --out results/connect_four/connect_four_hour/pons_values.json

For each model (a run directory or exported model) and each of Pons' sets (`--sets`, default all six), the
values of every position for the side to move, grouped by the position's perfect-play result (win, draw,
loss: the sign of Pons' score): positions, mean and standard deviation, and the win-loss AUC
(`azjax.play.benchmarks.value_by_result`: the chance a won position is valued above a lost one; 0.5 for a
constant value). `net`: the network's value (no search). With `--search`, the model's self-play search (its
training settings, root noise included) runs from every position and its two kinds of q
(`azjax.methods.alphazero.search_q`) are graded too: `q_root`, the root's mean backed-up value, and
`q_policy`, the value of the search's policy target. The JSON (`--out`) holds them with the exact command.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    from azjax.play.benchmarks import PONS_SETS

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="Connect Four run directories or exported models")
    p.add_argument("--data", help="Pons test sets (JSONL; default: the copy in azjax/data)")
    p.add_argument("--sets", nargs="+", default=list(PONS_SETS), choices=PONS_SETS)
    p.add_argument("--limit", type=int, default=None, help="only the first K positions of each set")
    p.add_argument("--search", action="store_true", help="grade the self-play search's q values too")
    p.add_argument("--seed", type=int, default=0, help="the search's key")
    p.add_argument("--out", default="results/connect_four/pons_values.json")
    return p


def value_readout(evaluator: Any, policy: Any) -> Any:
    """A jitted (params, key, states [B]) -> {"net": [B]}, and with a self-play search `policy`
    (`azjax.build.search_policy`) its two kinds of q too, "q_root" and "q_policy" [B]."""
    import jax

    from azjax.methods.alphazero import search_q

    @jax.jit
    def values(params: Any, key: jax.Array, states: Any) -> dict[str, jax.Array]:
        out = {"net": evaluator(params, states)[1]}
        if policy is not None:
            searched, _ = policy.search(params, key, states)
            out.update(q_root=search_q(searched, "root"), q_policy=search_q(searched, "policy"))
        return out

    return values


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    import jax
    import numpy as np

    from azjax.build import cached_evaluator, game_named, load_model, search_policy
    from azjax.play.benchmarks import load_pons, value_by_result
    from azjax.play.selfplay_stats import replay_moves

    t_start = time.time()
    sets = load_pons(args.data, args.sets, args.limit)
    game = game_named("connect_four")
    results = []
    for path in args.models:
        config, params = load_model(path)
        if config.game != "connect_four":
            raise SystemExit(f"{path} plays {config.game}, not connect_four")
        evaluator = cached_evaluator(config, game)
        policy = search_policy(config, game, evaluator) if args.search else None
        values = value_readout(evaluator, policy)
        rows = []
        for pons_set in sets.values():
            graded = values(params, jax.random.key(args.seed), replay_moves(game, pons_set.moves))
            row: dict[str, Any] = dict(set=pons_set.name)
            for name, v in graded.items():
                row[name] = value_by_result(np.asarray(v), pons_set.score)
                means = ", ".join(f"{k} {r['mean']:+.3f}" for k, r in row[name]["by_result"].items() if r["positions"])
                print(f"{path} {pons_set.name:>14} {name:>8}: win-loss AUC {row[name]['win_loss_auc']:.3f}; "
                      f"mean {means}", flush=True)
            rows.append(row)
        search = None if policy is None else dict(kind=policy.spec.kind, simulations=policy.spec.num_simulations,
                                                  gumbel_scale=policy.spec.gumbel_scale)
        results.append(dict(model=path, search=search, sets=rows))
    return dict(command=command, args=vars(args), results=results, seconds=round(time.time() - t_start, 1),
                notes="values are for the side to move: net = the network's (no search); q_root = the self-play "
                      "search's root mean backed-up value; q_policy = the value of its policy target; results are "
                      "the sign of Pons' perfect-play score; win_loss_auc = P(value of a won position > value of a "
                      "lost one), ties 1/2")


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    write_json(args.out, run(args, script_command(__file__, argv)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
