"""A sweep of K seeds as one jitted program against the same K runs one after another (`azjax sweep` against
`azjax train`), on the quick Connect Four preset; writes results/speed/bench_sweep.json (or _<device>.json).

    python -m scripts.bench_sweep --seeds 4 --steps 10            # CPU
    python -m scripts.bench_sweep --seeds 8 --steps 20 --out results/speed/bench_sweep_h100.json   # a GPU

Both sides run the same loop steps from the same seeds; each side's first step (its compile) is timed
apart from the steady steps. The figure is the ratio of the sweep's wall time to the sequential runs',
taken in one process (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import numpy as np


def timed_steps(step, state, steps: int) -> tuple[float, float]:
    """(seconds of the first step, compile included; seconds of the next steps)."""
    t0 = time.perf_counter()
    state, m = step(state)
    jax.block_until_ready(m)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(steps - 1):
        state, m = step(state)
    jax.block_until_ready((state, m))
    return first, time.perf_counter() - t0


def main(argv: list[str]) -> int:
    from azjax.hosts import gpu_while_loop_graphs

    gpu_while_loop_graphs()  # as `azjax` does, before pgx (azjax.config) starts JAX's backend
    from azjax.checkpoint import script_command, write_json
    from azjax.config import config_flags, config_overrides, preset
    from azjax.train.loop import Trainer
    from azjax.train.sweep import Sweep

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="connect_four")
    p.add_argument("--preset", default="quick")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--steps", type=int, default=10, help="loop steps per run (the first one compiles)")
    p.add_argument("--sequential_runs", type=int, default=0,
                   help="how many of the seeds also run alone, one after another (0: all; the GPU goal, 8 seeds in "
                        "<= 2x one run, needs one)")
    p.add_argument("--other_steps", type=int, default=3,
                   help="loop steps of the sweep with the other batching (0: not timed)")
    p.add_argument("--out", default="results/speed/bench_sweep.json")
    # Every config field as a flag, as `azjax train` has them (--min_replay_size: SGD runs in the timed steps only
    # once the replay holds this much; the run-book's --tiny gives toy network and batch sizes).
    config_flags(p)
    args = p.parse_args(argv)
    if not 0 <= args.sequential_runs <= args.seeds:
        p.error(f"--sequential_runs must be in 0..--seeds ({args.seeds}), got {args.sequential_runs}")

    configs = [preset(args.game, args.preset, **{**config_overrides(args), "seed": s}) for s in range(args.seeds)]

    alone = configs[:args.sequential_runs or args.seeds]
    sequential_first, sequential_rest = [], []
    for config in alone:
        trainer = Trainer(config)
        first, rest = timed_steps(trainer.step, trainer.init(config.seed), args.steps)
        sequential_first.append(first)
        sequential_rest.append(rest)
        # A line per phase: a run cut short by a lent GPU's time limit still says how far it got.
        print(f"run {config.seed} alone: first step {first:.1f} s, next {args.steps - 1} steps {rest:.2f} s",
              flush=True)
    sweep = Sweep(configs)
    sweep_first, sweep_rest = timed_steps(sweep.step, sweep.init(), args.steps)
    print(f"sweep of {args.seeds} ({sweep.batching}): first step {sweep_first:.1f} s, next {args.steps - 1} steps "
          f"{sweep_rest:.2f} s", flush=True)
    other = "vmap" if sweep.batching == "unrolled" else "unrolled"
    if args.other_steps > 0:
        other_sweep = Sweep(configs, batching=other)
        other_first, other_rest = timed_steps(other_sweep.step, other_sweep.init(), args.other_steps)

    # Runs not timed alone count as the mean of those that were (the same program on other seeds).
    scale = args.seeds / len(alone)
    sequential = scale * (sum(sequential_first) + sum(sequential_rest))
    swept = sweep_first + sweep_rest
    steady = scale * sum(sequential_rest) / (sweep_rest if sweep_rest > 0 else float("nan"))
    device = jax.devices()[0]
    result = {
        "command": script_command(__file__, argv),
        "device": f"{device.platform}: {device.device_kind} x{jax.device_count()}",
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "game": args.game, "preset": args.preset, "seeds": args.seeds, "steps": args.steps,
        "sequential_runs": len(alone),
        "sweep_mesh_runs_x_games": list(sweep.run_devices()),
        "sequential_s": {"total": sequential, "first_steps": sequential_first, "other_steps": sequential_rest},
        "sweep_batching": sweep.batching,
        "sweep_s": {"total": swept, "first_step": sweep_first, "other_steps": sweep_rest},
        "other_batching": None if args.other_steps == 0 else {
            "batching": other, "steps": args.other_steps, "first_step_s": other_first, "other_steps_s": other_rest,
            "step_over_default_batching_step": (other_rest / max(args.other_steps - 1, 1))
            / (sweep_rest / max(args.steps - 1, 1))},
        "sweep_over_one_run_steady": sweep_rest / float(np.mean(sequential_rest)),
        "sweep_over_sequential_total": swept / sequential,
        "sequential_over_sweep_steady": steady,
        "note": "sweep_over_one_run_steady: the sweep's steady steps against one run's (the goal on a GPU: "
                "8 seeds in <= 2x one run); sweep_over_sequential_total: wall time, compiles included "
                "(runs not timed alone count as the mean of those that were).",
    }
    write_json(args.out, result)
    print(f"{args.seeds} runs: sequential {sequential:.1f} s, sweep {swept:.1f} s (ratio {swept / sequential:.2f}); "
          f"steady steps: sweep = {result['sweep_over_one_run_steady']:.2f} x one run -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
