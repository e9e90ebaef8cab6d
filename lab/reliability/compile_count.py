"""Counts compilations of the loop step after a run's first step, through checkpoints, evaluations
and a resume, and records the count in results/reliability/reliability.json under `compile_count_after_step1`
(merged into the file: other scripts write other keys).

    python -m lab.reliability.compile_count                  # connect_four quick, 6 steps, stop at 3, resume
    python -m lab.reliability.compile_count --game go_9x9 --out /tmp/reliability.json

The run: steps 1-3 of the preset (checkpoints at 2 and at the stop, an evaluation at 2), then a resume
in a new trainer for steps 4-6 (checkpoints at 4 and 6, evaluations at 4 and 6). Evaluations play
`--eval_games` games at small budgets: what is counted is compilation, not strength.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="connect_four")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--eval_games", type=int, default=4)
    parser.add_argument("--out", default="results/reliability/reliability.json")
    args = parser.parse_args(argv)

    from azjax.compile_cache import enable_compilation_cache
    from azjax.config import preset
    from lab.reliability.compile_watch import STEP_FUNCTION, watch_run_and_resume

    enable_compilation_cache()  # a cache hit is still counted: JAX reports it as a compilation event

    cfg = preset(args.game, args.preset, num_steps=6, checkpoint_every=2, eval_every=2, eval_games=args.eval_games,
                 eval_simulations=8, eval_opponent_simulations=8)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="azjax-compile-count-") as tmp:
        watch = watch_run_and_resume(cfg, Path(tmp) / "run", stop_after=3)
    count = watch.after_first_step(STEP_FUNCTION)
    section = {
        "count": count,
        "command": script_command(__file__, argv),
        "what": "compilations of the loop step (jit(_step_local)) after each trainer's first step, counted from "
                "JAX's backend-compile events: steps 1-3 (checkpoints at 2 and 3, evaluation at 2), then a resume "
                "in a new trainer for steps 4-6 (checkpoints and evaluations at 4 and 6)",
        "game": args.game,
        "preset": args.preset,
        "step_compilations": [{"trainer": c.trainer, "before_step": c.steps_done + 1, "seconds": round(c.seconds, 2)}
                              for c in watch.of(STEP_FUNCTION)],
        "all_compilations_after_first_step": [
            {"function": c.fun_name, "trainer": c.trainer, "after_step_of_trainer": c.steps_done}
            for c in watch.compilations if c.steps_done >= 1],
        "seconds": round(time.perf_counter() - t0, 1),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.exists() else {}  # merge by key: keep the other sections
    data["compile_count_after_step1"] = section
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_file = out.with_suffix(".tmp")
    tmp_file.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp_file, out)
    print(f"{count} compilations of the step after the first step; wrote compile_count_after_step1 in {out}")
    return 0 if count == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
