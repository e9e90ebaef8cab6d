"""Times the test suite or its fast tier and records the run: the pytest command, its summary line, the wall time,
every test of a second or more (`slowest`) and those seconds summed by module (`by_module`: where to trim), the
commit and the machine's core count (`--out`, default results/speed/test_times_TIER.json).

    python -m scripts.time_tests --tier fast      # python -m pytest -q -m "not slow"
    python -m scripts.time_tests --tier full      # python -m pytest -q (what .ci/run runs after its installs)

Exits with pytest's status, so a failing run is recorded (its summary says so) and still fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIERS = {"fast": ["-m", "not slow"], "full": []}


def summary_line(output: str) -> str:
    """pytest's last line, e.g. '667 passed in 209.52s (0:03:29)' (without the ===== rule)."""
    lines = [line.strip("= ").strip() for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    if not lines:
        raise SystemExit("pytest printed no summary line: " + output[-2000:])
    return lines[-1]


def slowest(output: str) -> list[dict[str, object]]:
    """pytest's `--durations` table as rows {seconds, phase, test}, slowest first."""
    rows = []
    for line in output.splitlines():
        m = re.match(r"\s*([\d.]+)s (call|setup|teardown)\s+(\S+)", line)
        if m:
            rows.append({"seconds": float(m.group(1)), "phase": m.group(2), "test": m.group(3)})
    return rows


def by_module(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The seconds of `rows` (as `slowest` gives them) summed by test file, as rows {module, seconds}, largest first
    (a list: the file's keys are written sorted)."""
    totals: dict[str, float] = {}
    for row in rows:
        module = str(row["test"]).split("::")[0]
        totals[module] = totals.get(module, 0.0) + float(row["seconds"])  # type: ignore[arg-type]
    return [{"module": m, "seconds": round(t, 1)} for m, t in sorted(totals.items(), key=lambda kv: -kv[1])]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tier", choices=list(TIERS), default="fast")
    p.add_argument("--out", default=None, help="JSON (default results/speed/test_times_TIER.json)")
    args = p.parse_args(argv)
    # Every phase of a second or more in the durations table, not the configured slowest 25: the whole picture.
    command = [sys.executable, "-m", "pytest", "-q", "--durations=0", "--durations-min=1", *TIERS[args.tier]]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    sys.stdout.write(proc.stdout[-3000:])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    shown = " ".join(["python", "-m", "pytest", "-q", *(f'"{a}"' if " " in a else a for a in TIERS[args.tier])])
    out = Path(args.out or f"results/speed/test_times_{args.tier}.json")
    given = sys.argv[1:] if argv is None else list(argv)
    record = dict(command=shlex.join(["python", "-m", "scripts.time_tests", *given]),
                  tier=args.tier, pytest=shown, summary=summary_line(proc.stdout), wall_seconds=round(seconds, 1),
                  slowest=(rows := slowest(proc.stdout)), by_module=by_module(rows), exit_status=proc.returncode,
                  commit=commit, cpu_cores=os.cpu_count(),
                  date=time.strftime("%Y-%m-%d %H:%M:%S"))
    if not out.is_absolute():
        out = ROOT / out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    print(f"{args.tier}: {record['summary']} ({record['wall_seconds']} s); wrote {out}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
