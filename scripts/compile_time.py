"""First-run time with and without JAX's persistent compilation cache: for each game, the same
`azjax train` command (the quick preset, 2 steps) runs in a fresh process twice, first with an empty
cache directory (cold), then with the directory the first run filled (warm). Writes
results/speed/compile_time.json.

    python -m scripts.compile_time                              # connect_four and go_9x9
    python -m scripts.compile_time --game connect_four --out /tmp/compile_time.json

first_step_s is the first loop step as metrics.csv records it (building the step, then running it);
second_step_s is the step alone, so first_step_s - second_step_s is about what building it cost.
process_s is the whole command: imports, the init function, both steps and the checkpoint.
step_build_s splits the building of the step by JAX's own compile events: tracing to a jaxpr,
lowering to StableHLO, and the XLA compile (or, warm, reading the compiled program from the cache).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs `azjax.cli.main(argv)` and writes JAX's compile events for the loop step into a JSON file.
CHILD = """
import json, sys
from jax import monitoring
phases = {"/jax/core/compile/jaxpr_trace_duration": "trace_s",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
          "/jax/core/compile/backend_compile_duration": "xla_compile_or_cache_read_s"}
seen, hits = {}, []
def on_duration(event, seconds, **kw):
    if event in phases and "_step_local" in str(kw.get("fun_name", "")):
        seen[phases[event]] = round(seen.get(phases[event], 0.0) + seconds, 2)
monitoring.register_event_duration_secs_listener(on_duration)
monitoring.register_event_listener(lambda event, **kw: hits.append(1) if event.endswith("cache_hits") else None)
from azjax.cli import main
code = main(sys.argv[2:])
json.dump({"step_build_s": seen, "persistent_cache_hits": len(hits)}, open(sys.argv[1], "w"))
sys.exit(code)
"""


def train_once(game: str, run_dir: Path, cache: Path) -> dict:
    events = run_dir.parent / f"{run_dir.name}_events.json"
    cmd = [sys.executable, "-c", CHILD, str(events), "train", "--game", game, "--preset", "quick", "--num_steps", "2",
           "--eval_every", "0", "--checkpoint_every", "2", "--no-progress", "--run_dir", str(run_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "AZJAX_"))}
    env.update(AZJAX_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {
        "first_step_s": round(float(rows[0]["step_s"]), 2),
        "second_step_s": round(float(rows[1]["step_s"]), 2),
        "process_s": round(seconds, 2),
        "cache_entries_after": sum(1 for p in cache.iterdir() if not p.name.endswith("-atime")),
        **json.loads(events.read_text()),
    }


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", action="append", default=None, help="repeatable; default connect_four, go_9x9")
    parser.add_argument("--out", default="results/speed/compile_time.json")
    args = parser.parse_args(argv)
    games = args.game or ["connect_four", "go_9x9"]
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory(prefix="azjax-compile-time-") as tmp:
        for game in games:
            cache = Path(tmp) / f"cache_{game}"
            cache.mkdir()
            cold = train_once(game, Path(tmp) / f"{game}_cold", cache)
            warm = train_once(game, Path(tmp) / f"{game}_warm", cache)
            results[game] = {"cold": cold, "warm": warm}
            print(f"{game}: first step {cold['first_step_s']:.1f} s cold, {warm['first_step_s']:.1f} s warm; "
                  f"whole command {cold['process_s']:.1f} s cold, {warm['process_s']:.1f} s warm", flush=True)
    import jax

    out = {
        "command": script_command(__file__, argv),
        "train_command": "azjax train --game GAME --preset quick --num_steps 2 --eval_every 0 --checkpoint_every 2 "
                         "--no-progress --run_dir RUN (AZJAX_CACHE_DIR=an empty directory, then the same one; run "
                         "through azjax.cli.main in a fresh python process that records JAX's compile events)",
        "games": results,
        "machine": {"cpus": os.cpu_count(), "platform": jax.devices()[0].platform, "jax": jax.__version__,
                    "load_average_1_5_15_before": [round(x, 2) for x in load_before],
                    "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
                    "note": "shared machine: other jobs ran at the same time (see the load averages); cold and "
                            "warm of a game ran one after the other"},
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
