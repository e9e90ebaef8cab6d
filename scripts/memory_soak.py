"""Flat memory: the resident memory of a training run, sampled while it trains for an hour.

    python scripts/memory_soak.py [--minutes 60] [--every 15] [--out results/reliability.json] \
        -- azjax train --game chess --preset quick --run_dir runs/chess_light ...

Starts the training command (with `--minutes` added, so it stops itself with a checkpoint), reads its
resident set size (VmRSS from /proc, Linux) every `--every` seconds, and writes the `memory` section
of `--out`: the samples, the RSS after the first 5 minutes and at the end, the largest, and whether
every sample after 5 minutes stays within 10% of the 5-minute value. Other sections of the file are
kept. The command's own output goes to `--log`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WARM_UP_S = 300.0  # memory is compared against its value after the first 5 minutes
TOLERANCE = 0.10


def rss_mib(pid: int) -> float | None:
    """The resident set size of process `pid` in MiB (None once it has exited)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


def summarize(samples: list[list[float]]) -> dict[str, Any]:
    """Flatness of [seconds, MiB] samples after the warm-up."""
    after = [(t, m) for t, m in samples if t >= WARM_UP_S]
    if not after:
        return {"samples": samples, "flat": None, "note": f"the run ended before {WARM_UP_S:g} s"}
    base = after[0][1]
    worst = max(after, key=lambda s: abs(s[1] - base))
    return {
        "samples": samples,
        "rss_mib_at_5_min": round(base, 1),
        "rss_mib_at_end": round(after[-1][1], 1),
        "rss_mib_max": round(max(m for _, m in samples), 1),
        "minutes_sampled": round(samples[-1][0] / 60.0, 1),
        "largest_change_after_5_min": round((worst[1] - base) / base, 4),
        "largest_growth_after_5_min": round(max(m - base for _, m in after) / base, 4),  # a leak shows here
        "flat_within_10_percent": all(abs(m - base) <= TOLERANCE * base for _, m in after),
    }


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, update_json

    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    p.add_argument("--out", default="results/reliability.json")
    p.add_argument("--log", default="runs/memory_soak.log")
    args = p.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        p.error("give the training command after --, e.g. -- azjax train --game chess ...")
    if command[:1] == ["azjax"] and shutil.which("azjax") is None:
        command = [sys.executable, "-m", "azjax.cli", *command[1:]]
    command = [*command, "--minutes", str(args.minutes)]

    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    samples: list[list[float]] = []
    with open(args.log, "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        t0 = time.monotonic()
        while proc.poll() is None:
            mib = rss_mib(proc.pid)
            if mib is not None and mib >= 1.0:  # None once it exited; a few kB while it is being exec'd
                samples.append([round(time.monotonic() - t0, 1), round(mib, 1)])
            time.sleep(args.every)
    memory = {**summarize(samples), "exit_code": proc.returncode, "training_command": shlex.join(argv[split + 1 :]),
              "command": script_command(__file__, argv)}
    update_json(args.out, {"memory": memory})
    print(f"memory: {memory.get('rss_mib_at_5_min')} MiB at 5 min, {memory.get('rss_mib_at_end')} MiB at the end "
          f"({memory.get('minutes_sampled')} min), flat within 10%: {memory.get('flat_within_10_percent')}; "
          f"wrote {args.out}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
