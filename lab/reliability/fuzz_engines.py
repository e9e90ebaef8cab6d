"""Fuzzes `azjax gtp` (every game) and `azjax uci` through a pipe and records the counts in
results/reliability/reliability.json (key `fuzz`, merged into the file).

    python -m lab.reliability.fuzz_engines                       # 10,000 lines per engine and game
    python -m lab.reliability.fuzz_engines --lines 500 --out /tmp/r.json

The engines play untrained 1x8 models made in a temporary directory (4 visits a search), so the
count measures the protocol front ends, not the strength. See lab/reliability/fuzz.py for what is checked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import lab.reliability.fuzz as fuzz
from azjax.checkpoint import update_json
from azjax.games import GAMES
from lab.reliability.fuzz import fuzz_gtp, fuzz_uci, make_untrained_model

SEARCH = {"connect_four": "gumbel", "go_7x7": "gumbel", "go_9x9": "puct", "chess": "gumbel"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=10_000, help="fuzz lines per engine and game")
    parser.add_argument("--game", action="append", default=None, help=f"GTP games (default: {', '.join(GAMES)})")
    parser.add_argument("--no-uci", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds without an answer that count as a hang")
    parser.add_argument("--out", default="results/reliability/reliability.json")
    args = parser.parse_args(argv)
    games = args.game or list(GAMES)
    env = dict(os.environ)
    env.setdefault("AZJAX_CACHE_DIR", os.path.expanduser("~/.cache/azjax/jax"))
    env["PYTHONPATH"] = str(Path(fuzz.__file__).parents[2])  # the engines run this checkout's azjax
    results = {}
    with tempfile.TemporaryDirectory(prefix="azjax-fuzz-") as tmp:
        runs = [("gtp", g) for g in games] + ([] if args.no_uci else [("uci", "chess")])
        for engine, game in runs:
            model = make_untrained_model(Path(tmp) / game, game, SEARCH[game])
            argv_engine = [sys.executable, "-m", "azjax.cli", engine, "--checkpoint", model]
            t0 = time.perf_counter()
            log = lambda msg, t0=t0: print(f"[{time.perf_counter() - t0:6.0f} s] {msg}", flush=True)  # noqa: E731
            if engine == "gtp":
                report = fuzz_gtp(argv_engine, game, args.lines, seed=args.seed, timeout=args.timeout, env=env, log=log)
            else:
                report = fuzz_uci(argv_engine, args.lines, seed=args.seed, timeout=args.timeout, env=env, log=log)
            d = report.to_dict()
            d.update(engine_command=f"azjax {engine} --checkpoint UNTRAINED_1x8_{game.upper()} (4 visits)",
                     command=" ".join(["python -m lab.reliability.fuzz_engines",
                                       *(sys.argv[1:] if argv is None else argv)]),
                     seed=args.seed, hang_timeout_s=args.timeout, date=time.strftime("%Y-%m-%d %H:%M"))
            results[f"{engine}_{game}"] = d
            print(f"{engine} {game}: {report.lines_sent} lines, {report.crashes} crashes, {report.hangs} hangs, "
                  f"{report.malformed_replies} malformed replies ({report.seconds:.0f} s)", flush=True)
            for p in report.problems[:5]:
                print("   ", p, flush=True)
    # Merge run by run: the GTP and UCI runs may come from separate invocations.
    out = Path(args.out)
    old = json.loads(out.read_text()).get("fuzz", {}) if out.exists() else {}
    runs = {**old.get("runs", {}), **results}
    summary = {
        "runs": runs,
        "total_lines": sum(r["lines_sent"] for r in runs.values()),
        "total_crashes": sum(r["crashes"] for r in runs.values()),
        "total_hangs": sum(r["hangs"] for r in runs.values()),
        "total_malformed_replies": sum(r["malformed_replies"] for r in runs.values()),
    }
    update_json(out, {"fuzz": summary})
    print(f"wrote the fuzz section of {args.out}")
    return 0 if all(r["crashes"] + r["hangs"] + r["malformed_replies"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
