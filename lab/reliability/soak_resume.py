"""Kill soak: a small Connect Four run killed with SIGKILL at random moments (during self-play steps,
steps with SGD, checkpoint writes, evaluations) and resumed each time; its metrics, evaluations and
final parameters must equal those of an uninterrupted run of the same seed. Writes the `kill_soak`
section of results/reliability/reliability.json (merged into the file). See lab/reliability/soak.py for the method.

    python -m lab.reliability.soak_resume                  # 20 kills
    python -m lab.reliability.soak_resume --kills 3 --out /tmp/r.json --workdir /tmp/soak
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from azjax.checkpoint import script_command, update_json
from lab.reliability.soak import soak

# Small enough for minutes on 2 CPU cores; the replay is large (64k positions, ~25 MB) so that a
# checkpoint write lasts long enough to be hit; SGD starts after a few steps (the replay fills first),
# so some steps are self-play only.
OVERRIDES = dict(game="connect_four", num_envs=16, num_simulations=4, moves_per_step=4, replay_size=65536,
                 min_replay_size=192, batch_size=32, sgd_steps_per_step=2, num_blocks=1, num_channels=8,
                 eval_every=6, eval_games=4, eval_simulations=4, eval_opponent_simulations=8,
                 checkpoint_every=3, lr_warmup_steps=1, num_steps=24, log_every=1, temperature_moves=4, seed=7)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--steps", type=int, default=OVERRIDES["num_steps"])
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill schedule")
    parser.add_argument("--workdir", default=None, help="keep the runs here (default: a temporary directory)")
    parser.add_argument("--out", default="results/reliability/reliability.json")
    args = parser.parse_args(argv)
    overrides = {**OVERRIDES, "num_steps": args.steps}
    env = dict(os.environ)
    env.setdefault("AZJAX_CACHE_DIR", os.path.expanduser("~/.cache/azjax/jax"))
    with tempfile.TemporaryDirectory(prefix="azjax-soak-") as tmp:
        report = soak(args.workdir or tmp, overrides, kills=args.kills, seed=args.seed, env=env,
                      log=lambda m: print(m, flush=True))
    report["command"] = script_command(__file__, argv)
    report["date"] = time.strftime("%Y-%m-%d %H:%M")
    update_json(args.out, {"kill_soak": report})
    summary = {k: report[k] for k in ("trials_killed", "resumed", "resumed_exactly", "kills_by_phase", "seconds")}
    summary["rounds"] = [{k: r[k] for k in ("run", "resumed_exactly", "final_params_equal",
                                            "checkpoints_failing_check", "unfinished_writes_left")}
                         for r in report["rounds"]]
    print(json.dumps(summary, indent=1))
    print(f"wrote the kill_soak section of {args.out}")
    intact = all(not r["checkpoints_failing_check"] and not r["unfinished_writes_left"] for r in report["rounds"])
    return 0 if report["resumed_exactly"] and intact else 1


if __name__ == "__main__":
    sys.exit(main())
