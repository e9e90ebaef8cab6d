"""Flat memory: the resident memory of a training run, sampled while it trains for an hour.

    python -m lab.reliability.memory_soak [--minutes 60] [--every 15] [--out results/reliability/reliability.json] \
        -- azjax train --game chess --preset quick --run_dir runs/chess_light ...

Starts the training command (with `--minutes` added, so it stops itself with a checkpoint), reads its
resident memory from /proc (Linux) every `--every` seconds, and writes the `memory` section of `--out`:
the samples, the memory after the first 5 minutes and at the end of the training budget, the largest, and
whether every sample in between stays within 10% of the 5-minute value. Other sections of the file are
kept. The command's own output goes to `--log`.

Flatness is judged on the anonymous resident memory (RssAnon: the heap, where a leak grows). The total
(VmRSS) is recorded too; its file-backed part (mapped libraries and files) can be dropped by the kernel
when other processes need memory and come back later, which moves VmRSS without any change in the run.
Samples after the budget (the final checkpoint and the exit) are kept but not judged.
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

WARM_UP_S = 300.0  # memory is compared against its value after the first 5 minutes
TOLERANCE = 0.10


def memory_mib(pid: int, field: str = "VmRSS") -> float | None:
    """A memory line of /proc/PID/status (VmRSS, RssAnon, RssFile) in MiB (None once the process exited)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


def summarize(samples: list[list[float]], budget_s: float | None = None) -> dict[str, Any]:
    """Flatness of [seconds, anonymous MiB, total MiB] samples between the warm-up and the budget's end."""
    judged = [s for s in samples if s[0] >= WARM_UP_S and (budget_s is None or s[0] <= budget_s)]
    if not judged:
        return {"samples": samples, "flat_within_10_percent": None,
                "note": f"no sample between {WARM_UP_S:g} s and the end of the budget"}
    base, base_total = judged[0][1], judged[0][-1]
    worst = max(judged, key=lambda s: abs(s[1] - base))
    return {
        "samples_columns": ["seconds", "rss_anon_mib", "vm_rss_mib"],
        "samples": samples,
        "rss_anon_mib_at_5_min": round(base, 1),
        "rss_anon_mib_at_budget_end": round(judged[-1][1], 1),
        "rss_anon_mib_max": round(max(s[1] for s in samples), 1),
        "vm_rss_mib_at_5_min": round(base_total, 1),
        "vm_rss_mib_at_budget_end": round(judged[-1][-1], 1),
        "vm_rss_mib_max": round(max(s[-1] for s in samples), 1),
        "minutes_judged": round((judged[-1][0] - judged[0][0]) / 60.0 + WARM_UP_S / 60.0, 1),
        "largest_change_after_5_min": round((worst[1] - base) / base, 4),
        "largest_growth_after_5_min": round(max(s[1] - base for s in judged) / base, 4),  # a leak shows here
        "flat_within_10_percent": all(abs(s[1] - base) <= TOLERANCE * base for s in judged),
    }


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, update_json

    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    p.add_argument("--out", default="results/reliability/reliability.json")
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
            anon, total = memory_mib(proc.pid, "RssAnon"), memory_mib(proc.pid, "VmRSS")
            if anon is not None and total is not None and total >= 1.0:  # a few kB while it is being exec'd
                samples.append([round(time.monotonic() - t0, 1), round(anon, 1), round(total, 1)])
            time.sleep(args.every)
    memory = {**summarize(samples, budget_s=args.minutes * 60.0), "exit_code": proc.returncode,
              "training_command": shlex.join(argv[split + 1 :]),
              "command": script_command(__file__, argv)}
    update_json(args.out, {"memory": memory})
    print(f"anonymous memory: {memory.get('rss_anon_mib_at_5_min')} MiB at 5 min, "
          f"{memory.get('rss_anon_mib_at_budget_end')} MiB at {memory.get('minutes_judged')} min, "
          f"flat within 10%: {memory.get('flat_within_10_percent')}; "
          f"wrote {args.out}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
