"""Kill soak: a training run killed with SIGKILL at random moments and resumed, against one never killed.

    report = soak(workdir, overrides, kills=20, seed=0)

The runs are `azjax train` processes started through `python -m lab.reliability.soak child ARGS...`, which runs
the real command line after wrapping three functions of the host driver so that they print phase
markers on stdout (`@@phase begin|end NAME STEP`): the loop step (`Trainer.step`, synchronised so that
the marker spans the device work), the periodic evaluation (`azjax.train.driver.evaluate`) and the checkpoint
(`azjax.train.run_dir.RunDir.checkpoint`: orbax state, manifest, params.msgpack, plots). Nothing they compute
changes.

1. A reference run goes from start to end without interruption; its markers give each phase's duration.
2. A soak run starts the same config in another directory. Before each segment the driver picks a
   phase (the one with the fewest kills so far among those still ahead: a self-play step, i.e. one
   whose step ran no SGD in the reference because the replay was still filling; a self-play + SGD
   step; a checkpoint write; an evaluation) and an occurrence of it at most two checkpoints ahead, and
   sends SIGKILL a random fraction of that phase's median reference duration after the phase begins. The phase
   the process was actually in when the signal was sent (its last marker) is what the report counts.
   The run is then resumed (`azjax train --resume`); once a run reaches its end, the next round starts a
   fresh one, until `kills` kills in all.
3. Each soak run's metrics.csv (every column the loop computes), eval.csv (all but the time) and final
   parameters must equal the reference's exactly, and every checkpoint left must pass the manifest check.

The loop step is one jitted function (self-play, replay writes and SGD together), so "during SGD"
means during a step that runs SGD, not an instant inside the SGD part of it.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

MARK = "@@phase"
PHASES = ("selfplay", "sgd", "checkpoint", "eval")


# ---------------------------------------------------------------- the child: azjax train with markers


def _install_markers() -> None:
    import jax

    import azjax.train.driver as train_mod
    from azjax.train.loop import Trainer
    from azjax.train.run_dir import RunDir

    counter = {"step": None}

    def say(what: str, name: str, step: int) -> None:
        print(f"{MARK} {what} {name} {step} {time.time():.6f}", flush=True)

    original_step = Trainer.step

    def step(self: Trainer, state: Any) -> Any:
        n = int(jax.device_get(state.step)) + 1
        counter["step"] = n
        say("begin", "step", n)
        out = original_step(self, state)
        jax.block_until_ready(out)  # the device work belongs inside the phase
        say("end", "step", n)
        return out

    original_eval = train_mod.evaluate

    def evaluate(config: Any, trainer: Any, params: Any, step_: int) -> Any:
        say("begin", "eval", step_)
        out = original_eval(config, trainer, params, step_)
        say("end", "eval", step_)
        return out

    original_ckpt = RunDir.checkpoint

    def checkpoint(self: RunDir, step_: int, state: Any, *rest: Any) -> None:
        say("begin", "checkpoint", step_)
        original_ckpt(self, step_, state, *rest)
        say("end", "checkpoint", step_)

    Trainer.step = step  # type: ignore[method-assign]
    train_mod.evaluate = evaluate
    RunDir.checkpoint = checkpoint  # type: ignore[method-assign]


def child_main(argv: list[str]) -> int:
    from azjax.cli.main import main, start_devices

    start_devices()  # before the markers import the loop, which starts JAX's backend
    _install_markers()

    return main(argv)


# ---------------------------------------------------------------- the driver


class Child:
    """One `azjax train` process with a reader thread collecting its output lines."""

    def __init__(self, args: list[str], env: dict[str, str], log_file: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "lab.reliability.soak", "child", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, bufsize=1)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log = open(log_file, "a")  # noqa: SIM115
        self.log.write(f"$ azjax {' '.join(args)}\n")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.write(line)
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait(self) -> int:
        code = self.proc.wait()
        time.sleep(0.1)
        self.log.flush()
        return code


def _parse_mark(line: str) -> tuple[str, str, int, float] | None:
    parts = line.split()
    if len(parts) == 5 and parts[0] == MARK:
        return parts[1], parts[2], int(parts[3]), float(parts[4])
    return None


def _train_args(run_dir: Path, overrides: dict[str, Any]) -> list[str]:
    args = ["train", "--game", str(overrides.get("game", "connect_four")), "--preset", "quick", "--run_dir",
            str(run_dir), "--no-progress"]
    for k, v in overrides.items():
        if k != "game":
            args += [f"--{k}", str(v)]
    return args


def _read_rows(file: Path) -> list[dict[str, str]]:
    if not file.exists():
        return []
    with open(file, newline="") as f:
        return list(csv.DictReader(f))


@dataclasses.dataclass
class Kill:
    target: str  # the phase aimed at
    target_step: int
    phase: str  # the phase the process was in when SIGKILL was sent ("between" if none had begun)
    step: int
    delay_s: float
    resumed_from: int | None = None  # the step the next segment resumed from
    skipped_damaged: int = 0  # damaged or unfinished checkpoints the next resume reported


def soak(workdir: str | Path, overrides: dict[str, Any], kills: int = 20, seed: int = 0,
         env: dict[str, str] | None = None, log: Any = print) -> dict[str, Any]:
    """Runs the reference and the killed run in `workdir`; returns the report (see the module docstring)."""
    from azjax.checkpoint import StateCheckpointer

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = str(Path(__file__).parents[2])  # the children run this checkout's azjax and lab/
    rng = random.Random(seed)
    t0 = time.perf_counter()
    log_file = workdir / "soak.log"

    # 1. the reference
    ref_dir = workdir / "reference"
    child = Child(_train_args(ref_dir, overrides), env, log_file)
    durations: dict[str, list[float]] = {p: [] for p in PHASES}
    begun: dict[tuple[str, int], float] = {}
    while (line := child.lines.get()) is not None:
        m = _parse_mark(line)
        if m is None:
            continue
        what, name, step, t = m
        if what == "begin":
            begun[(name, step)] = t
        else:
            durations.setdefault(name, []).append(t - begun[(name, step)])
    if child.wait() != 0:
        raise RuntimeError(f"the reference run failed; see {log_file}")
    ref_rows = _read_rows(ref_dir / "metrics.csv")
    num_steps = len(ref_rows)
    sgd = {int(r["step"]): r["sgd_applied"] == "1" for r in ref_rows}
    step_s = durations.pop("step")
    durations["selfplay"] = [d for i, d in enumerate(step_s, 1) if not sgd.get(i)] or step_s
    durations["sgd"] = [d for i, d in enumerate(step_s, 1) if sgd.get(i)] or step_s
    checkpoint_every = int(overrides["checkpoint_every"])
    eval_every = int(overrides.get("eval_every", 0))
    log(f"reference: {num_steps} steps in {time.perf_counter() - t0:.0f} s; median phase seconds "
        + ", ".join(f"{p} {statistics.median(d):.3f}" for p, d in durations.items() if d))

    def occurrences(phase: str, after: int, upto: int) -> list[int]:
        steps = range(after + 1, upto + 1)
        if phase == "selfplay":
            return [s for s in steps if not sgd[s]]
        if phase == "sgd":
            return [s for s in steps if sgd[s]]
        if phase == "checkpoint":
            return [s for s in steps if s % checkpoint_every == 0 or s == num_steps]
        return [s for s in steps if eval_every and (s % eval_every == 0 or s == num_steps)]

    # 2. soak runs: a round runs one fresh run to its end through kills and resumes; rounds repeat until
    # `kills` kills (a kill sets the run back at most to its last checkpoint, so a round ends after a
    # dozen kills or so).
    done: list[Kill] = []
    counts = {p: 0 for p in PHASES}
    rounds = []
    segments = 0
    while len(done) < kills or not rounds:
        run_dir = workdir / f"soak{len(rounds) + 1}"
        resume_from = 0
        first = True
        while True:
            args = _train_args(run_dir, overrides) if first else ["train", "--resume", str(run_dir), "--no-progress"]
            first = False
            target = None
            if len(done) < kills:
                window = min(resume_from + 2 * checkpoint_every, num_steps)
                options = [(counts[p], rng.random(), p) for p in PHASES if occurrences(p, resume_from, window)]
                if options:
                    phase = min(options)[2]
                    step = rng.choice(occurrences(phase, resume_from, window))
                    target = (phase, step, rng.random() * statistics.median(durations[phase]))
            killed, outputs, code = _segment(Child(args, env, log_file), target, sgd)
            segments += 1
            if done and done[-1].resumed_from is None:  # what the resume that started this segment reported
                done[-1].skipped_damaged = sum("skipping checkpoint" in ln or "unfinished checkpoint" in ln
                                               for ln in outputs)
                resumed = [ln for ln in outputs if ln.startswith(("resumed from step", "no checkpoint yet"))]
                done[-1].resumed_from = int(resumed[0].split()[-1]) if resumed and resumed[0][0] == "r" else 0
            if killed is not None:
                done.append(killed)
                if killed.phase in counts:
                    counts[killed.phase] += 1
                resume_from = StateCheckpointer(run_dir).manager.latest_step() or 0
                log(f"kill {len(done)}/{kills}: aimed at {killed.target} of step {killed.target_step}, landed in "
                    f"{killed.phase} of step {killed.step} after {killed.delay_s:.3f} s; latest checkpoint "
                    f"{resume_from}")
                continue
            if code != 0:
                raise RuntimeError(f"a soak segment failed with exit code {code}; see {log_file}")
            break  # the run reached its end
        rounds.append(_compare(ref_dir, run_dir, ref_rows))
        log(f"round {len(rounds)}: resumed exactly: {rounds[-1]['resumed_exactly']}")

    by_phase = {p: sum(k.phase == p for k in done) for p in (*PHASES, "between")}
    return {
        "trials_killed": len(done),
        "resumed": sum(k.resumed_from is not None for k in done),
        "resumed_exactly": all(r["resumed_exactly"] for r in rounds),
        "kills_by_phase": by_phase,
        "kills": [dataclasses.asdict(k) for k in done],
        "rounds": rounds,
        "steps": num_steps,
        "segments": segments,
        "damaged_or_unfinished_skipped_on_resume": sum(k.skipped_damaged for k in done),
        "seconds": round(time.perf_counter() - t0, 1),
        "overrides": overrides,
        "seed": seed,
    }


def _segment(child: Child, target: tuple[str, int, float] | None,
             sgd: dict[int, bool]) -> tuple[Kill | None, list[str], int]:
    """Runs one process until it ends, or kills it `target[2]` seconds after phase `target[0]` of step
    `target[1]` begins. Returns (the kill or None, its output lines, its exit code)."""
    last: tuple[str, str, int] | None = None  # the latest marker: (begin|end, name, step)
    outputs: list[str] = []
    killed = None
    while (line := child.lines.get()) is not None:
        outputs.append(line)
        m = _parse_mark(line)
        if m is None:
            continue
        last = (m[0], m[1], m[2])
        if target is None or m[0] != "begin":
            continue
        phase, step, delay = target
        name = "step" if phase in ("selfplay", "sgd") else phase
        if m[1] != name or m[2] != step:
            continue
        time.sleep(delay)
        while True:  # drain what arrived meanwhile: the phase the process is in now
            try:
                more = child.lines.get_nowait()
            except queue.Empty:
                break
            if more is None:
                child.lines.put(None)
                break
            outputs.append(more)
            mm = _parse_mark(more)
            if mm is not None:
                last = (mm[0], mm[1], mm[2])
        child.proc.send_signal(signal.SIGKILL)
        actual = "between" if last[0] == "end" else (
            ("sgd" if sgd[last[2]] else "selfplay") if last[1] == "step" else last[1])
        killed = Kill(target=phase, target_step=step, phase=actual, step=last[2], delay_s=round(delay, 4))
        break
    return killed, outputs, child.wait()


def _compare(ref_dir: Path, run_dir: Path, ref_rows: list[dict[str, str]]) -> dict[str, Any]:
    """The soak run against the reference: loop metrics, evaluations, parameters, checkpoints."""
    from azjax.checkpoint import ORBAX_TMP_MARK, StateCheckpointer
    from azjax.methods.sai import KomiStarts
    from azjax.train.measures import UNIQUE_STATES_COLUMNS
    from azjax.train.run_dir import METRIC_COLUMNS

    loop_columns = [c for c in ref_rows[0] if c in METRIC_COLUMNS or c in KomiStarts.columns
                    or c in UNIQUE_STATES_COLUMNS]
    got_rows = _read_rows(run_dir / "metrics.csv")
    metric_diffs = [f"row {i + 1} {c}: {a.get(c)} != {b.get(c)}"
                    for i, (a, b) in enumerate(zip(ref_rows, got_rows, strict=False))
                    for c in loop_columns if a.get(c) != b.get(c)]
    if len(got_rows) != len(ref_rows):
        metric_diffs.append(f"{len(got_rows)} metric rows, the reference has {len(ref_rows)}")
    ref_evals, got_evals = _read_rows(ref_dir / "eval.csv"), _read_rows(run_dir / "eval.csv")
    eval_diffs = [f"eval row {i + 1} {c}" for i, (a, b) in enumerate(zip(ref_evals, got_evals, strict=False))
                  for c in a if c != "time_s" and a[c] != b.get(c)]
    if len(ref_evals) != len(got_evals):
        eval_diffs.append(f"{len(got_evals)} eval rows, the reference has {len(ref_evals)}")
    params_equal = (ref_dir / "params.msgpack").read_bytes() == (run_dir / "params.msgpack").read_bytes()
    checkpointer = StateCheckpointer(run_dir)
    problems = {s: checkpointer.check(s) for s in checkpointer.manager.all_steps()}
    return {
        "run": run_dir.name,
        "resumed_exactly": not metric_diffs and not eval_diffs and params_equal,
        "metric_rows_compared": len(ref_rows),
        "metric_columns_compared": loop_columns,
        "metric_differences": metric_diffs[:20],
        "eval_rows_compared": len(ref_evals),
        "eval_differences": eval_diffs[:20],
        "final_params_equal": params_equal,
        "checkpoints_left": sorted(checkpointer.manager.all_steps()),
        "checkpoints_failing_check": {str(s): p for s, p in problems.items() if p},
        "unfinished_writes_left": [p.name for p in (run_dir / "checkpoints").iterdir() if ORBAX_TMP_MARK in p.name],
    }


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        sys.exit(child_main(sys.argv[2:]))
    sys.exit("usage: python -m lab.reliability.soak child AZJAX_ARGS... (see lab/reliability/soak_resume.py)")
