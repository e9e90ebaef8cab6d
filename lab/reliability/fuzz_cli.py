"""Malformed command lines against every `azjax` subcommand: each must end in one line naming the problem and
exit status 2, with no traceback and no file written.

    python -m lab.reliability.fuzz_cli [--lines 1000] [--seed 0] [--out results/reliability/reliability.json]

Every line is a valid base command of one subcommand with one to three mutations, each of which makes it
invalid on its own: a bad number (negative, zero where it is meaningless, not a number, NaN), an abbreviated or
unknown flag, a flag without its value, a bad choice, a bad agent spec or grid, a path that is missing, an
exported model where a run or an output belongs, a resume that changes the run. The lines run in this process
through `azjax.cli.main` (a `SystemExit` is an exit status), in a temporary working directory that holds a copy of
an exported model and a run directory. The points where a command would start real work (build the training
loop, play games, start a search or an engine) are replaced by a sentinel, so a line that slips through every
check is reported as `accepted` instead of training for hours; and the working directory is compared before and
after every line. `AZJAX_CPU_DEVICES=2` splits the CPU into two devices, so an odd `--num_envs` is a bad value.

Writes the counts under the key `fuzz_cli` of `--out` (other keys kept); exit status 1 if any line was not
rejected cleanly.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import functools
import io
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "results" / "models" / "connect_four_quick"

Tokens = list[str]
Mutation = Callable[[Tokens, random.Random], Tokens]


class Accepted(Exception):  # noqa: N818 - a sentinel, not an error of the program under test
    """A line passed every check and reached the start of real work."""


# ---------------------------------------------------------------- mutations

POSITIVE_BAD = ["0", "-5", "x", "1.5", "", "nan", "1e3", "--"]
NONNEGATIVE_BAD = ["-1", "x", "2.5", "", "inf"]
EVEN_BAD = ["0", "3", "-2", "x", "1.0"]
FLOAT_BAD = ["nan", "inf", "x", ""]


def set_flag(flag: str, values: list[str]) -> Mutation:
    """Appends `flag BAD` (argparse keeps the last value, so it replaces one the base gave)."""
    return lambda t, r: [*t, flag, r.choice(values)]


def add(*tokens: str) -> Mutation:
    return lambda t, r: [*t, *tokens]


def replace_at(index: int, values: list[str]) -> Mutation:
    return lambda t, r: [*t[:index], r.choice(values), *t[index + 1:]]


def drop_at(index: int) -> Mutation:
    return lambda t, r: [*t[:index], *t[index + 1:]]


def abbreviated(flags: list[str]) -> Mutation:
    """A flag cut short (argparse would take a unique prefix for the whole flag; azjax refuses it)."""

    def mutate(t: Tokens, r: random.Random) -> Tokens:
        flag = r.choice([f for f in flags if len(f) > 5])
        cut = flag[: r.randrange(4, len(flag))]
        return [*t, cut, "1"] if cut not in every_flag() else [*t, flag[:-1] + "Z", "1"]

    return mutate


@functools.cache
def every_flag() -> frozenset[str]:
    """Every option string of every subcommand (a prefix that is itself a flag is no abbreviation)."""
    from azjax.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return frozenset(o for p in subs.choices.values() for a in p._actions for o in a.option_strings)


def dangling(flags: list[str]) -> Mutation:
    """A flag without its value: the line's last token (`line` applies it last, so nothing fills it)."""

    def mutate(t: Tokens, r: random.Random) -> Tokens:
        return [*t, r.choice(flags)]

    mutate.last = True  # type: ignore[attr-defined]
    return mutate


UNKNOWN = add("--frobnicate", "1")
DASHED = add("--num-simulations", "4")  # dashes for underscores: not a flag
STRAY = add("stray_positional")


def config_mutations(split: bool) -> list[Mutation]:
    """Bad config fields of `train` and `sweep` (named in Config's one-line errors). `split`: the run's games and
    batch are split across the two devices (a sweep of two seeds puts one run on each device instead)."""
    return [
        set_flag("--num_simulations", ["0", "-3", "x", "2.5"]),
        set_flag("--num_envs", ["-8", "0", "x", *(["3"] if split else [])]),  # 3: not divisible by two devices
        set_flag("--batch_size", ["100000000", *(["7"] if split else [])]),  # huge: above replay_size
        set_flag("--learning_rate", ["fast", "nan", "-1"]),
        set_flag("--search", ["alphabeta", ""]),
        set_flag("--komi", ["7.5"]),  # Go only
        set_flag("--value_head", ["sai"]),  # Go only
        set_flag("--colour_plane", ["maybe"]),
        set_flag("--min_replay_size", ["999999999"]),
        set_flag("--dirichlet_fraction", ["1.5"]),
        set_flag("--start", ["not a fen"]),
    ]


def commands(tmp: Path, devices: int) -> dict[str, tuple[Tokens, list[Mutation]]]:
    """Per subcommand: a valid base line and the mutations that make it invalid (on `devices` JAX devices)."""
    model, run = "model", "run"
    specs = ["mcts:0", "mcts:-3", "mcts:x", "model:0", "model:-1", "model:abc", "model:n_scl=-1",
             "model:search=alphabeta", "policy:nowhere", "", "nowhere/model", "gtp:", "uci:", "random:4"]
    train_flags = ["--game", "--preset", "--run_dir", "--resume", "--minutes", "--num_simulations",
                   "--learning_rate", "--num_envs"]
    return {
        "train": (["train", "--game", "connect_four", "--preset", "quick", "--run_dir", "runs/new", "--no-progress"], [
            *config_mutations(split=devices == 2), set_flag("--minutes", ["0", "-1", "x", "nan", "inf"]),
            set_flag("--game", ["go_5x5", ""]), set_flag("--preset", ["huge", ""]),
            set_flag("--run_dir", [model, f"{model}/inside", run]),
            set_flag("--replay_ratio", ["0", "-1", "x", "nan"]), set_flag("--init_from", ["nowhere", run + "/x"]),
            abbreviated(train_flags), dangling(train_flags), UNKNOWN, DASHED, STRAY,
        ]),
        "plan": (["plan", "--game", "connect_four", "--preset", "quick", "--num_blocks", "1"], [
            *config_mutations(split=False), set_flag("--devices", POSITIVE_BAD),
            set_flag("--replay_ratio", ["0", "-1", "x", "inf"]), set_flag("--game", ["go_5x5", ""]),
            set_flag("--preset", ["huge", ""]), set_flag("--out", [f"{model}/plan.json", f"{model}/params.msgpack"]),
            abbreviated(["--devices", "--compile", "--replay_ratio", "--out"]), dangling(["--devices", "--out"]),
            UNKNOWN, STRAY,
        ]),
        "train_resume": (["train", "--resume", run, "--no-progress"], [
            replace_at(2, [model, "nowhere", "positions.txt", f"{model}/inside"]),
            add("--game", "connect_four"), add("--preset", "quick"), add("--run_dir", "runs/other"),
            set_flag("--num_simulations", ["7", "0", "x"]), set_flag("--num_envs", ["4", "3"]),
            set_flag("--minutes", ["0", "-2"]), abbreviated(train_flags), UNKNOWN,
        ]),
        "sweep": (["sweep", "--game", "connect_four", "--preset", "quick", "--seeds", "2", "--run_dir", "runs/sw",
                   "--no-progress"], [
            *config_mutations(split=False), set_flag("--seeds", POSITIVE_BAD),
            set_flag("--grid", ["foo", "num_envs=", "seed=1,2", "nosuchfield=1", "learning_rate=-1",
                                "num_channels=8,8", "num_envs=0,4"]),
            set_flag("--run_dir", [model, f"{model}/sw"]), add("--resume", "runs/sw"),
            abbreviated(["--seeds", "--grid", "--run_dir", "--resume", "--preset"]), UNKNOWN, STRAY,
        ]),
        "eval": (["eval", "model:4", "random", "--games", "2"], [
            replace_at(1, specs), replace_at(2, specs), drop_at(2),
            set_flag("--games", EVEN_BAD), set_flag("--simulations", POSITIVE_BAD),
            set_flag("--batch_size", POSITIVE_BAD), set_flag("--n_scl", NONNEGATIVE_BAD),
            set_flag("--seed", ["x", "1.5"]), set_flag("--search", ["alphabeta"]), set_flag("--game", ["go_5x5"]),
            set_flag("--out", [f"{model}/eval.json", f"{model}/params.msgpack"]),
            abbreviated(["--games", "--simulations", "--batch_size", "--n_scl"]),
            dangling(["--games", "--simulations", "--out"]), UNKNOWN,
        ]),
        "play": (["play", model, "--simulations", "4"], [
            replace_at(1, ["nowhere", "positions.txt", "", run + "/checkpoints"]),
            set_flag("--simulations", POSITIVE_BAD), set_flag("--n_scl", NONNEGATIVE_BAD),
            set_flag("--color", ["blue", ""]), set_flag("--seed", ["x"]),
            abbreviated(["--simulations", "--color", "--n_scl"]), UNKNOWN, STRAY,
        ]),
        "bench": (["bench", "--game", "connect_four", "--quick"], [
            set_flag("--rounds", POSITIVE_BAD), set_flag("--num_envs", POSITIVE_BAD),
            set_flag("--num_simulations", POSITIVE_BAD), set_flag("--scaling_envs", POSITIVE_BAD),
            set_flag("--n_scl", NONNEGATIVE_BAD), set_flag("--scaling", ["1,x", "0", "-4", "16,,x"]),
            set_flag("--game", ["go_5x5"]), set_flag("--preset", ["huge"]),
            abbreviated(["--rounds", "--scaling", "--breakdown", "--num_envs"]), UNKNOWN,
        ]),
        "export": (["export", run, "exported"], [
            replace_at(1, ["nowhere", model + "/inside", "positions.txt"]), replace_at(2, [run]), drop_at(2),
            set_flag("--step", ["0", "-1", "x", "5", "1.5"]), abbreviated(["--step"]), UNKNOWN,
            add("stray_a", "stray_b"),  # two: with the destination dropped, one would stand in for it
        ]),
        **{name: ([name, "--checkpoint", model], [
            replace_at(2, ["nowhere", "positions.txt", ""]), drop_at(1),
            set_flag("--visits", POSITIVE_BAD), set_flag("--n_scl", NONNEGATIVE_BAD),
            set_flag("--search", ["alphabeta"]), set_flag("--seed", ["x"]),
            abbreviated(["--checkpoint", "--visits", "--n_scl"]), UNKNOWN, STRAY,
        ]) for name in ("gtp", "uci")},
        "analyze": (["analyze", "--checkpoint", model, "--moves", "4 4"], [
            replace_at(2, ["nowhere", "positions.txt"]), set_flag("--visits", POSITIVE_BAD),
            set_flag("--n_scl", NONNEGATIVE_BAD), set_flag("--top", NONNEGATIVE_BAD),
            set_flag("--batch_size", POSITIVE_BAD), set_flag("--komi", FLOAT_BAD),
            set_flag("--search", ["alphabeta"]), add("--positions", "positions.txt"),
            set_flag("--out", [f"{model}/a.jsonl"]), abbreviated(["--checkpoint", "--visits", "--moves", "--top"]),
            dangling(["--visits", "--moves"]), UNKNOWN, STRAY,
        ]),
        "arena": (["arena", "model:4", "random", "--games", "2", "--out_dir", "arena_out"], [
            replace_at(1, specs), drop_at(2), set_flag("--games", EVEN_BAD),
            set_flag("--simulations", POSITIVE_BAD), set_flag("--random_opening_plies", NONNEGATIVE_BAD),
            set_flag("--max_plies", POSITIVE_BAD), set_flag("--komi", FLOAT_BAD),
            set_flag("--batch_size", POSITIVE_BAD), set_flag("--prior_draws", ["-1", "nan", "x"]),
            set_flag("--seed", ["x"]), set_flag("--out_dir", [model, f"{model}/arena"]),
            set_flag("--openings", ["nowhere.txt"]), set_flag("--game", ["go_5x5", "go_9x9"]),
            abbreviated(["--games", "--gauntlet", "--simulations", "--out_dir"]), UNKNOWN,
        ]),
        "none": (["train"], [replace_at(0, ["frob", "", "TRAIN", "--version"]), drop_at(0)]),
    }


def line(base: Tokens, mutations: list[Mutation], rng: random.Random) -> Tokens:
    tokens = list(base)
    chosen = rng.sample(mutations, k=min(len(mutations), rng.randint(1, 3)))
    for mutate in sorted(chosen, key=lambda m: getattr(m, "last", False)):
        tokens = mutate(tokens, rng)
    return tokens


# ---------------------------------------------------------------- the harness


def workdir(root: Path) -> None:
    """An exported model (a copy of the committed one), a run directory, a positions file."""
    shutil.copytree(MODEL, root / "model")
    run = root / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copyfile(MODEL / "config.json", run / "config.json")
    shutil.copyfile(MODEL / "params.msgpack", run / "params.msgpack")
    (run / "metrics.csv").write_text("step\n")
    (root / "positions.txt").write_text("4 4\n")


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@contextlib.contextmanager
def sentinels() -> Any:
    """Replaces the starts of real work with `Accepted`."""
    import azjax.cli.arena
    import azjax.engines.engine
    import azjax.play.arena
    import azjax.train.bench
    import azjax.train.driver
    import azjax.train.plan
    import azjax.train.sweep
    from azjax.build import load_model

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise Accepted

    def engine(checkpoint: Any, *args: Any, **kwargs: Any) -> Any:
        load_model(checkpoint)  # what the engine checks first: a bad path is still refused
        raise Accepted

    patches = [(azjax.train.driver, "Trainer", stop), (azjax.train.sweep, "Sweep", stop),
               (azjax.play.arena, "match", stop), (builtins, "input", stop), (azjax.train.bench, "main", stop),
               (azjax.train.plan, "plan", stop),
               (azjax.cli.arena, "setup_openings", stop), (azjax.cli.arena, "random_openings", stop),
               (azjax.engines.engine.Engine, "from_checkpoint", staticmethod(engine))]
    saved = [(obj, name, vars(obj)[name]) for obj, name, _ in patches]
    try:
        for obj, name, value in patches:
            setattr(obj, name, value)
        yield
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)


def run_line(argv: Tokens) -> tuple[str, str]:
    """(outcome, detail) of one line: rejected, or what went wrong."""
    from azjax.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    except Accepted:
        return "accepted", ""
    except Exception:
        return "traceback", traceback.format_exc(limit=3).strip().splitlines()[-1]
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip() and not ln.startswith("JAX compilation cache:")]
    if "Traceback" in err.getvalue():
        return "traceback", lines[-1] if lines else ""
    if code != 2:
        return "wrong_exit", f"exit {code}: {' | '.join(lines)[:300]}"
    if len(lines) != 1 or "error:" not in lines[0]:
        return "not_one_line", " | ".join(lines)[:300]
    return "rejected", lines[0]


def fuzz(num_lines: int, seed: int = 0, verbose: bool = False) -> dict[str, Any]:
    import jax

    rng = random.Random(seed)
    cwd = os.getcwd()
    findings: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="azjax-fuzz-cli-") as tmp:
        root = Path(tmp)
        workdir(root)
        table = commands(root, jax.device_count())
        names = sorted(table)
        os.chdir(root)
        try:
            with sentinels():
                for i in range(num_lines):
                    name = names[i % len(names)]  # every subcommand gets its share
                    base, mutations = table[name]
                    argv = line(base, mutations, rng)
                    before = snapshot(root)
                    outcome, detail = run_line(argv)
                    after = snapshot(root)
                    if outcome == "rejected" and after != before:
                        changed = sorted(set(after.items()) ^ set(before.items()))
                        outcome, detail = "wrote", ", ".join(sorted({p for p, _ in changed}))[:300]
                    counts.setdefault(name, {}).setdefault(outcome, 0)
                    counts[name][outcome] += 1
                    if outcome != "rejected":
                        findings.append({"argv": argv, "outcome": outcome, "detail": detail})
                        # Start the next line from a clean directory.
                        shutil.rmtree(root)
                        root.mkdir()
                        workdir(root)
                        os.chdir(root)  # the old directory's inode is gone
                    if verbose:
                        print(f"{outcome:12s} {' '.join(map(repr, argv))}: {detail}", file=sys.__stderr__)
        finally:
            os.chdir(cwd)
    return {"lines": num_lines, "rejected": num_lines - len(findings), "findings": findings,
            "by_command": counts, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="merge the counts into this JSON file (key fuzz_cli)")
    p.add_argument("--verbose", action="store_true", help="every line and its outcome on stderr")
    args = p.parse_args(argv)
    os.environ.setdefault("AZJAX_CPU_DEVICES", "2")
    from azjax.cli.main import start_devices

    start_devices()  # before anything starts JAX's backend (`main` would, too late: the fuzz asks JAX first)
    os.environ["AZJAX_CACHE_DIR"] = "off"  # nothing written to the user's compilation cache
    result = fuzz(args.lines, args.seed, verbose=args.verbose)
    print(f"{result['rejected']} of {result['lines']} malformed lines rejected with one line and exit status 2, "
          f"nothing written ({result['seconds']} s)")
    for f in result["findings"][:20]:
        print(f"  {f['outcome']}: {' '.join(map(repr, f['argv']))}: {f['detail']}")
    if args.out:
        from azjax.checkpoint import script_command, update_json

        update_json(args.out, {"fuzz_cli": {
            "command": script_command(__file__, argv), "date": time.strftime("%Y-%m-%d %H:%M"),
            "lines": result["lines"], "rejected": result["rejected"], "findings": result["findings"][:50],
            "by_command": result["by_command"], "seconds": result["seconds"],
            "cpus": os.cpu_count(), "note": "in-process through azjax.cli.main; the starts of real work replaced "
            "by a sentinel (a line reaching one counts as accepted, a finding)"}})
        print(f"wrote {args.out} (key fuzz_cli)")
    return 0 if not result["findings"] else 1


if __name__ == "__main__":
    sys.exit(main())
