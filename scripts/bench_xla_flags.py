"""What XLA's CPU flags do to the training loop: its compile time and its step time, in one run.

For each flag set (a string of XLA flags; "" is XLA's defaults) a fresh process (XLA reads its flags once, when
its backend starts) builds the Connect Four (or `--game`) loop at `--preset` with `--override`s, with JAX's
persistent compilation cache off, and records JAX's own compile events for the loop step (tracing, lowering, the
XLA compile) and then the median of `--steps` further steps, each also in CPU seconds of the process (all its
threads: on a machine shared with other jobs they measure the work where wall seconds measure the share). The sets
run `--repeats` times, interleaved, so the load falls on each alike; the JSON (`--out`) has every process's figures,
each set's medians, and its ratios to the first set (the baseline).

    python -m scripts.bench_xla_flags --tiny --out results/speed/bench_xla_flags_tiny.json -- \\
        "--xla_backend_optimization_level=0" "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
    python -m scripts.bench_xla_flags --preset quick --out results/speed/bench_xla_flags_quick.json -- \\
        "" "--xla_cpu_use_fusion_emitters=false"

`--tiny` is the tests' loop (tests/conftest.py's `tiny_overrides`): the suite is compile-bound, so its flags are
chosen by the compile column; a training run is step-bound, so its flags by the step column.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# tests/conftest.py's tiny_overrides: the loop the tests compile over and over.
TINY = dict(num_envs=8, num_simulations=4, moves_per_step=2, replay_size=64, min_replay_size=8, batch_size=8,
            sgd_steps_per_step=1, num_blocks=1, num_channels=8, eval_every=0, log_every=1, lr_warmup_steps=1,
            temperature_moves=4)

# One process: build the loop, time its first step by JAX's compile events and the steps after it.
CHILD = """
import json, statistics, sys, time
import jax
from jax import monitoring
from azjax.config import preset
from azjax.train.loop import Trainer
game, name, overrides, steps, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
phases = {"/jax/core/compile/jaxpr_trace_duration": "trace_s",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
          "/jax/core/compile/backend_compile_duration": "xla_compile_s"}
seen = {}
def on_duration(event, seconds, **kw):
    if event in phases and "_step_local" in str(kw.get("fun_name", "")):
        seen[phases[event]] = seen.get(phases[event], 0.0) + seconds
monitoring.register_event_duration_secs_listener(on_duration)
trainer = Trainer(preset(game, name, **overrides))
state = trainer.init(0)
t0, c0 = time.perf_counter(), time.process_time()
state, _ = trainer.step(state)
jax.block_until_ready(state)
first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
times, cpu = [], []
for _ in range(steps):
    t0, c0 = time.perf_counter(), time.process_time()
    state, _ = trainer.step(state)
    jax.block_until_ready(state)
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
json.dump(dict(first_step_s=first, step_s=statistics.median(times), first_step_cpu_s=first_cpu,
               step_cpu_s=statistics.median(cpu), **seen), open(out, "w"))
"""

FIGURES = ("xla_compile_s", "trace_s", "lower_s", "first_step_s", "step_s", "first_step_cpu_s", "step_cpu_s")


def parse_override(item: str) -> tuple[str, Any]:
    from azjax.config import parse_field

    if "=" not in item:
        raise SystemExit(f"--override expects FIELD=VALUE, got {item!r}")
    key, value = item.split("=", 1)
    return key, parse_field(key, value)


def one_process(args: argparse.Namespace, flags: str, overrides: dict[str, Any]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "XLA_FLAGS"))}
        env.update(XLA_FLAGS=flags, AZJAX_CACHE_DIR="off", JAX_ENABLE_COMPILATION_CACHE="false",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        proc = subprocess.run([sys.executable, "-c", CHILD, args.game, args.preset, json.dumps(overrides),
                               str(args.steps), str(out)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise SystemExit(f"the process with XLA_FLAGS={flags!r} failed: {last}")
        return {k: round(v, 3) for k, v in json.loads(out.read_text()).items()}


def summarise(flag_sets: list[str], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each flag set's median figures over its processes, and their ratios to the first set's."""
    rows = []
    for flags in flag_sets:
        mine = [r["figures"] for r in runs if r["flags"] == flags]
        rows.append(dict(flags=flags, processes=len(mine),
                         median={k: round(statistics.median(f[k] for f in mine), 3) for k in FIGURES
                                 if all(k in f for f in mine)}))
    base = rows[0]["median"]
    for row in rows:
        row["ratio_to_first"] = {k: round(v / base[k], 3) for k, v in row["median"].items() if base.get(k)}
    return rows


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json
    from azjax.config import PRESETS

    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="connect_four", choices=sorted(PRESETS))
    p.add_argument("--preset", default="quick")
    p.add_argument("--tiny", action="store_true", help="the tests' tiny loop (overrides the preset's sizes)")
    p.add_argument("--override", nargs="*", default=[], metavar="FIELD=VALUE")
    p.add_argument("flag_sets", nargs="+", help='XLA flag sets after "--", the first the baseline ("" = defaults)')
    p.add_argument("--steps", type=int, default=5, help="steps timed after the first")
    p.add_argument("--repeats", type=int, default=2, help="processes per flag set, interleaved")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.preset not in PRESETS[args.game]:
        raise SystemExit(f"--preset: {args.game} has no preset {args.preset!r} ({', '.join(PRESETS[args.game])})")
    if args.steps < 1 or args.repeats < 1:
        raise SystemExit("--steps and --repeats must be at least 1")
    overrides = {**(TINY if args.tiny else {}), **dict(parse_override(o) for o in args.override)}
    runs = []
    for repeat in range(args.repeats):
        for flags in args.flag_sets:
            t0 = time.time()
            figures = one_process(args, flags, overrides)
            runs.append(dict(flags=flags, repeat=repeat, figures=figures, process_s=round(time.time() - t0, 1)))
            print(f"XLA_FLAGS={flags!r}: {figures}", flush=True)
    write_json(args.out, dict(command=script_command(__file__, argv), game=args.game, preset=args.preset,
                              overrides=overrides, steps=args.steps, cpus=os.cpu_count(),
                              load_average_1_5_15=list(os.getloadavg()), runs=runs,
                              flag_sets=summarise(args.flag_sets, runs)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
