"""Trains variants of a preset side by side and evaluates each final network against one opponent.

Each variant is a name and config overrides on top of the preset (`name:field=value,field=value`;
`base:` is the preset itself). Every variant trains with `azjax train` in its own process (up to
`--parallel` at once), then plays `--games` games against `--opponent` with each `--eval` search
(`gumbel:64`, `puct:128`, ...). One JSON collects the settings, wall times and scores with their
95% intervals, so a preset change is chosen from measured numbers.

  python -m scripts.preset_sweep --game connect_four --preset quick \
      --variant base: --variant lr1e-3:learning_rate=1e-3 --eval gumbel:64 --eval puct:128 \
      --opponent mcts:200 --games 200 --out results/preset_sweep_connect_four.json

The scores carry over to other machines; the wall times do not. On one GPU keep `--parallel 1`:
processes share the device by time-slicing, and small loops, which are bound by kernel launches, slow
each other down far more than they overlap (8 Connect Four `quick` runs side by side on one H100 took
3.2 s a step each, while `azjax bench` times 8 self-play moves of one alone at 0.07 s). With
`--parallel` > 1, XLA_PYTHON_CLIENT_PREALLOCATE is set to false so the processes fit together.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """`name:field=value,field=value` -> (name, {field: value}); `name:` has no overrides."""
    name, sep, rest = text.partition(":")
    if not sep or not name:
        raise SystemExit(f"--variant {text!r}: expected NAME:field=value,... (e.g. base: or lr:learning_rate=1e-3)")
    overrides: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        field, eq, value = item.partition("=")
        if not eq or not field:
            raise SystemExit(f"--variant {text!r}: {item!r} is not field=value")
        overrides[field] = value
    return name, overrides


def parse_eval(text: str) -> tuple[str, int]:
    """`gumbel:64` -> ("gumbel", 64)."""
    kind, _, sims = text.partition(":")
    if kind not in ("gumbel", "puct") or not sims.isdigit():
        raise SystemExit(f"--eval {text!r}: expected gumbel:N or puct:N")
    return kind, int(sims)


def run_variant(name: str, overrides: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """Trains one variant, then evaluates its final network with every requested search."""
    run_dir = Path(args.runs_dir) / name
    log = run_dir.with_suffix(".log")
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    train = [sys.executable, "-m", "azjax.cli", "train", "--game", args.game, "--preset", args.preset,
             "--run_dir", str(run_dir), "--no-progress", "--eval_every", "0"]
    for field, value in overrides.items():
        train += [f"--{field}", value]
    started = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run(train, stdout=f, stderr=subprocess.STDOUT, check=False)
    train_s = time.perf_counter() - started
    result: dict[str, Any] = {"name": name, "overrides": overrides, "train_seconds": round(train_s, 1),
                              "train_command": " ".join(train[2:]), "evals": []}
    if done.returncode != 0:
        result["error"] = f"train exited {done.returncode}; see {log}"
        return result
    for kind, sims in args.eval:
        out = run_dir / f"eval_{kind}{sims}.json"
        cmd = [sys.executable, "-m", "azjax.cli", "eval", str(run_dir), args.opponent, "--games", str(args.games),
               "--simulations", str(sims), "--search", kind, "--seed", str(args.eval_seed), "--out", str(out)]
        with open(log, "a") as f:
            done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0:
            result["evals"].append({"search": kind, "simulations": sims, "error": f"eval exited {done.returncode}"})
            continue
        score = json.loads(out.read_text())
        result["evals"].append({"search": kind, "simulations": sims, **{k: score[k] for k in (
            "score", "score_low", "score_high", "wins", "draws", "losses", "first_score", "games", "seconds")}})
    print(f"{name}: train {train_s:.0f}s  " + "  ".join(
        f"{e['search']}{e['simulations']}={e.get('score', 'err')}" for e in result["evals"]), flush=True)
    return result


def main() -> None:
    from azjax.checkpoint import script_command

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--game", default="connect_four")
    p.add_argument("--preset", default="quick")
    p.add_argument("--variant", action="append", type=parse_variant, required=True)
    p.add_argument("--eval", action="append", type=parse_eval, default=None)
    p.add_argument("--opponent", default="mcts:200")
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--eval_seed", type=int, default=0)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--runs_dir", default="runs/preset_sweep")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    args.eval = args.eval or [("gumbel", 64)]
    names = [name for name, _ in args.variant]
    if len(set(names)) != len(names):
        raise SystemExit(f"variant names must differ: {names}")
    if args.parallel > 1:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

    started = time.perf_counter()
    devices = device_names()
    results: dict[str, dict[str, Any]] = {}

    def write() -> None:
        # Rewritten as each variant finishes, so a sweep cut short keeps what it measured.
        summary = {
            "command": script_command(__file__),
            "game": args.game, "preset": args.preset, "opponent": args.opponent, "games": args.games,
            "parallel": args.parallel, "wall_seconds": round(time.perf_counter() - started, 1),
            "machine": {"platform": platform.platform(), "devices": devices},
            "finished": len(results) == len(args.variant),
            "variants": [results[name] for name in names if name in results],
        }
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        futures = [pool.submit(run_variant, name, overrides, args) for name, overrides in args.variant]
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            results[result["name"]] = result
            write()
    print(f"wrote {args.out}")


def device_names() -> list[str]:
    """The accelerator(s) a child process sees, asked in a subprocess so this one never holds a device."""
    code = "import jax; print('\\n'.join(str(d) for d in jax.devices()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return out.stdout.split()


if __name__ == "__main__":
    main()
