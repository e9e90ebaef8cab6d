"""Go-Exploit, TDLeaf(lambda), playout caps and random openings against plain AlphaZero on Connect Four, at
equal self-play positions.

Every variant is the `quick` preset plus its switches (`VARIANTS`), trained for the same number of loop steps
(so the same self-play positions: num_envs x moves_per_step per step) with each of `--seeds` seeds. At
`--evals` evenly spaced points (and the end) the network, searching `--sims` simulations, is graded on
Pascal Pons' solver-labelled test sets (`--sets`, the first `--limit` positions each): the share of moves that
change the game-theoretic result (`azjax.play.benchmarks`). At the end it also plays `--mcts_games` games
against rollout MCTS (`--mcts_sims`).

The JSON (`--out`) holds every curve (error rate against self-play positions), its area under the curve
(the mean error rate over the schedule, trapezoids), the mean over seeds with a 95% t-interval, each
variant's difference from AlphaZero with its interval (seeds paired: seed s of both runs draws the same
initial network), the distinct positions self-play searched by depth and the value losses on visited and on search
states (Go-Exploit's measures: `azjax.train.measures`, `azjax.play.value_probe`), the final
scores against MCTS, wall times, the machine that finished each run (CPU model and vector extensions: a rerun on
another machine need not repeat a curve bit for bit) and the command. The PNG (`--plot`) draws the
curves.

    python -m lab.connect_four.variants_connect_four --num_steps 40 --seeds 3 --evals 4 \\
        --out results/connect_four/variants_connect_four.json --plot results/connect_four/variants_connect_four.png

`--preset hour --num_steps 1400` grades the `hour` preset's runs instead (search-contempt in training:
`--variants alphazero contempt_5`; a contempt variant whose n_scl the preset's simulation budget makes inert, as
contempt_28 at the hour preset's 16, is refused); `--resume` keeps the runs already in `--out` (with the commands
that made them, `earlier_commands`; also the runs of variants not named this time) and runs the missing ones, so
a sweep longer than a session goes on from its committed file; it refuses a file made on another CPU split
(`AZJAX_CPU_DEVICES`). `--checkpoint_dir` keeps the run in progress (its loop state, distinct positions and curve so
far, every `--checkpoint_every` steps), so `--resume` also goes on inside a run a session cut off; `--minutes` stops
the sweep by itself at such a point. `--model_dir` keeps each run's final network for a round robin (`azjax arena`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

# The switches of each variant on top of the quick preset (docs/methods.md sections 3, 4, 6; the papers' settings).
VARIANTS: dict[str, dict[str, Any]] = {
    "alphazero": {},
    "go_exploit_visited": dict(start_state_prob=0.01, archive="visited"),
    "go_exploit_search": dict(start_state_prob=0.01, archive="search"),
    # Ten times the initial-state starts (the paper's 9x9 Go setting): after the `hour` preset's random openings
    # (0-12 plies) the 0.01 archive plays few games from the empty board itself (docs/experiments.md).
    "go_exploit_visited_0.1": dict(start_state_prob=0.1, archive="visited"),
    "tdleaf_0.7": dict(td_lambda=0.7),
    "playout_cap": dict(full_search_prob=0.25, fast_simulations=4),
    "go_exploit_visited+tdleaf_0.7": dict(start_state_prob=0.01, archive="visited", td_lambda=0.7),
    # Not one of the papers: the `hour` preset's variety (azjax.methods.random_openings).
    "random_openings": dict(random_opening_plies=12),
    # Search-contempt in self-play (docs/methods.md section 1): the seed's reference code reports n_scl = 5 ahead of
    # plain PUCT at equal compute; 28 is its odds setting. The simulation budget is unchanged, so equal positions are
    # close to equal self-play time (each run's wall time is in the JSON).
    "contempt_5": dict(n_scl=5),
    "contempt_28": dict(n_scl=28),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--preset", default="quick", help="the Connect Four preset every variant starts from")
    p.add_argument("--num_steps", type=int, default=40, help="loop steps of every run")
    p.add_argument("--evals", type=int, default=4, help="evaluation points, evenly spaced, the last at the end")
    p.add_argument("--sims", type=int, default=64, help="the network's search budget when graded")
    p.add_argument("--data", help="Pons test sets (JSONL; default: the copy in azjax/data)")
    p.add_argument("--sets", nargs="+", default=["begin_hard", "begin_medium", "middle_medium"])
    p.add_argument("--limit", type=int, default=200, help="positions per set")
    p.add_argument("--mcts_games", type=int, default=20, help="games against rollout MCTS at the end (0 = none)")
    p.add_argument("--mcts_sims", type=int, default=200)
    p.add_argument("--probe_games", type=int, default=32,
                   help="games of the value-loss probe (visited and search states) at each evaluation point (0 = none)")
    p.add_argument("--override", nargs="*", default=[], metavar="FIELD=VALUE",
                   help="config overrides for every variant (e.g. num_envs=128)")
    p.add_argument("--out", default="results/connect_four/variants_connect_four.json")
    p.add_argument("--plot", default="results/connect_four/variants_connect_four.png")
    p.add_argument("--model_dir", help="save each run's final network as a model directory here "
                                       "(VARIANT_seedN: config and parameters), for round robins with `azjax arena`")
    p.add_argument("--checkpoint_dir", help="keep each run in progress here (VARIANT_seedN), checkpointed every "
                                            "--checkpoint_every steps: --resume goes on from a run's last checkpoint")
    p.add_argument("--checkpoint_every", type=int, default=100, help="loop steps between a run's checkpoints")
    p.add_argument("--minutes", type=float, default=0.0,
                   help="stop after this wall time (0 = none), checkpointing the run in progress (needs "
                        "--checkpoint_dir); --resume goes on from there")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in --out (same preset, steps and grading) and run only the missing ones")
    p.add_argument("--summarise", action="store_true",
                   help="train nothing: recompute the table and the plot of the runs already in --out")
    return p


def area_under_curve(xs: list[float], ys: list[float]) -> float:
    """The mean of y over [xs[0], xs[-1]] by trapezoids."""
    area = sum((x1 - x0) * (y0 + y1) / 2 for x0, x1, y0, y1 in zip(xs, xs[1:], ys, ys[1:], strict=False))
    return area / (xs[-1] - xs[0])


PROGRESS_FILE = "progress.json"  # a run's curve, games and minutes at its newest checkpoint


class RunInProgress:
    """A run's checkpoints under `--checkpoint_dir`/VARIANT_seedN: the loop state (`azjax.checkpoint`), the distinct
    positions seen (`azjax.train.measures.UniqueStates`) and PROGRESS_FILE, written in that order, so a progress file
    names a step whose state and positions are both on disk."""

    def __init__(self, run_dir: Path):
        from azjax.checkpoint import StateCheckpointer

        self.run_dir = run_dir
        self.checkpointer = StateCheckpointer(run_dir)

    def start(self, config: Any, resume: bool) -> None:
        """Saves the run's config; with `resume`, refuses a directory whose run was configured otherwise; without,
        forgets what an earlier run left there."""
        import shutil

        from azjax.checkpoint import config_mismatch, load_config, save_config

        if resume and (self.run_dir / "config.json").exists():
            mismatch = config_mismatch(load_config(self.run_dir), config)
            if mismatch:
                raise SystemExit(f"--resume: {self.run_dir} holds a run configured otherwise ({mismatch[0]}); "
                                 "move it away or give the same arguments")
        elif self.run_dir.exists():
            shutil.rmtree(self.run_dir)
            self.checkpointer = type(self.checkpointer)(self.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        save_config(self.run_dir, config)

    def restore(self, template: Any) -> tuple[Any, dict[str, Any], Any] | None:
        """(loop state, progress, distinct positions) at the newest checkpoint, or None if there is none whole."""
        from azjax.checkpoint import read_json
        from azjax.train.measures import UniqueStates

        if not (self.run_dir / PROGRESS_FILE).exists():
            return None
        progress = read_json(self.run_dir / PROGRESS_FILE)
        step = progress["step"]
        seen = UniqueStates.load(self.run_dir, step)
        if seen is None or self.checkpointer.check(step) is not None:
            print(f"  {self.run_dir}: no whole checkpoint at step {step}; the run starts over", flush=True)
            return None
        return self.checkpointer.restore(step, template), progress, seen

    def save(self, step: int, state: Any, seen: Any, progress: dict[str, Any]) -> None:
        from azjax.checkpoint import write_json

        self.checkpointer.save(step, state)
        seen.save(self.run_dir, step)
        write_json(self.run_dir / PROGRESS_FILE, {"step": step, **progress})


class Stopped(Exception):
    """The sweep's --minutes ran out inside a run; the run checkpointed where it stood."""


def variant_config(name: str, seed: int, args: argparse.Namespace) -> Any:
    """The config of variant `name`'s run of `seed`: the preset, `--override`s, the variant's switches."""
    from azjax.config import parse_field, preset

    overrides = dict(kv.split("=", 1) for kv in args.override)
    overrides = {k: parse_field(k, v) for k, v in overrides.items()}
    return preset("connect_four", args.preset, **{**overrides, **VARIANTS[name], "seed": seed,
                                                  "num_steps": args.num_steps, "eval_every": 0})


def refuse_inert_variants(args: argparse.Namespace) -> None:
    """SystemExit before anything runs if a variant's search-contempt cannot act at this preset's simulation budget:
    its runs would repeat AlphaZero's exactly (azjax.config.inert_contempt)."""
    from azjax.config import inert_contempt

    for name in args.variants:
        if (inert := inert_contempt(variant_config(name, 0, args))) is not None:
            raise SystemExit(f"{name} with --preset {args.preset}: {inert}")


def run_one(name: str, seed: int, args: argparse.Namespace, sets: dict[str, Any],
            deadline: float = float("inf")) -> dict[str, Any]:
    """One variant's run, graded along the way; raises Stopped (after a checkpoint) once `deadline` (time.time())
    has passed inside the run."""
    import jax

    from azjax.build import game_named
    from azjax.play.agents import network_agent, rollout_mcts_agent
    from azjax.play.arena import match
    from azjax.play.benchmarks import grade_agent
    from azjax.play.value_probe import value_probe
    from azjax.train.bench import machine
    from azjax.train.loop import Trainer
    from azjax.train.measures import UniqueStates, count_written

    config = variant_config(name, seed, args)
    in_progress = RunInProgress(Path(args.checkpoint_dir) / f"{name}_seed{seed}") if args.checkpoint_dir else None
    if in_progress is not None:
        in_progress.start(config, args.resume)
    trainer = Trainer(config)
    game = game_named("connect_four")
    eval_steps = sorted({round(args.num_steps * (i + 1) / args.evals) for i in range(args.evals)})
    positions_per_step = config.num_envs * config.moves_per_step
    state = trainer.init(seed)
    curve, t0, games, minutes_before, first_step = [], time.time(), 0, 0.0, 1
    seen = UniqueStates()
    if in_progress is not None:
        restored = in_progress.restore(state) if args.resume else None
        if restored is not None:
            state, progress, seen = restored
            curve, games, minutes_before = progress["curve"], progress["games"], progress["minutes"]
            first_step = progress["step"] + 1
            print(f"  {name} seed {seed}: going on from step {progress['step']} ({in_progress.run_dir})", flush=True)
    minutes = lambda: round(minutes_before + (time.time() - t0) / 60, 2)  # noqa: E731
    for step in range(first_step, args.num_steps + 1):
        moves_before = int(state.moves)
        state, m = trainer.step(state)
        games += int(m["games"])
        sizes = trainer.sizes  # each device's games and replay shard: the layout the loop wrote in
        count_written(seen, state.replay.obs, moves_before, int(state.moves), sizes.num_envs, sizes.replay_size,
                      sizes.num_devices)
        if step in eval_steps:
            agent = network_agent(config, game, state.params, args.sims)
            key = jax.random.key(1000 + step)  # common random numbers across variants and seeds
            grades = {s.name: grade_agent(game, agent, s, key).to_dict() for s in sets.values()}
            errors = sum(g["errors"] for g in grades.values()) / sum(g["positions"] for g in grades.values())
            losses = {}
            if args.probe_games:
                probe = value_probe(config.replace(eval_simulations=args.sims), game, args.probe_games)
                losses = {k: round(float(v), 4) for k, v in jax.device_get(probe(state.params, key)).items()
                          if k.startswith("value_loss")}
            curve.append(dict(step=step, self_play_positions=step * positions_per_step, error_rate=errors,
                              sets={k: round(g["error_rate"], 4) for k, g in grades.items()},
                              unique_states=seen.total, unique_states_by_depth=seen.by_depth(), **losses,
                              minutes=minutes()))
            print(f"  {name} seed {seed} step {step}: error rate {100 * errors:.1f}% "
                  f"({', '.join(f'{k} {100 * v:.1f}%' for k, v in curve[-1]['sets'].items())})", flush=True)
        if in_progress is not None and step < args.num_steps:
            stop = time.time() >= deadline
            if stop or step % args.checkpoint_every == 0:
                in_progress.save(step, state, seen, dict(curve=curve, games=games, minutes=minutes()))
            if stop:
                raise Stopped(f"{name} seed {seed} at step {step}")
    # The machine that finished the run: a rerun elsewhere need not repeat its curve (azjax.train.bench.cpu_model).
    out = dict(variant=name, seed=seed, curve=curve, games=games,
               trainable_in_final_replay=int(trainer.trainable(state.replay).sum()),
               minutes=minutes(), machine=machine())
    if args.model_dir:
        from azjax.checkpoint import save_config, save_params

        out["model"] = str(Path(args.model_dir) / f"{name}_seed{seed}")
        save_config(out["model"], config)
        save_params(out["model"], state.params)
    if args.mcts_games:
        agent = network_agent(config, game, state.params, args.sims)
        res = match(game, agent, rollout_mcts_agent(game, args.mcts_sims), args.mcts_games, jax.random.key(seed))
        out["vs_mcts"] = dict(opponent=f"mcts:{args.mcts_sims}", games=args.mcts_games, score=res.score,
                              wins=res.wins, draws=res.draws, losses=res.losses)
    return out


def summarise(runs: list[dict[str, Any]], variants: list[str]) -> dict[str, Any]:
    from azjax.play.arena import t_interval

    auc = {}
    for run in runs:
        xs = [p["self_play_positions"] for p in run["curve"]]
        ys = [p["error_rate"] for p in run["curve"]]
        run["auc"] = area_under_curve(xs, ys) if len(xs) > 1 else ys[0]
        auc.setdefault(run["variant"], {})[run["seed"]] = run["auc"]
    table = {}
    for v in variants:
        mean, low, high = t_interval(list(auc[v].values()))
        row = dict(auc_mean=mean, auc_low=low, auc_high=high, seeds=len(auc[v]))
        if v != "alphazero" and "alphazero" in auc:
            seeds = sorted(set(auc[v]) & set(auc["alphazero"]))
            diff = t_interval([auc[v][s] - auc["alphazero"][s] for s in seeds])
            row.update(auc_minus_alphazero=diff[0], diff_low=diff[1], diff_high=diff[2], seeds_paired=len(seeds),
                       beats_alphazero=None if diff[2] is None else bool(diff[2] < 0))
        scores = [r["vs_mcts"]["score"] for r in runs if r["variant"] == v and "vs_mcts" in r]
        if scores:
            row["vs_mcts_score_mean"] = sum(scores) / len(scores)
        table[v] = row
    return table


def plot(summary: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from azjax.train.plots import save_figure

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, v in enumerate(summary["variants"]):
        runs = [r for r in summary["runs"] if r["variant"] == v]
        for j, r in enumerate(runs):
            xs = [p["self_play_positions"] / 1e3 for p in r["curve"]]
            ys = [100 * p["error_rate"] for p in r["curve"]]
            row = summary["table"][v]
            label = f"{v} (AUC {100 * row['auc_mean']:.1f}%)" if j == 0 else None
            ax.plot(xs, ys, "o-", color=colours[i % len(colours)], alpha=0.7, label=label, markersize=3)
    ax.set_xlabel("self-play positions (thousands)")
    ax.set_ylabel("result-changing moves on Pons' sets (%)")
    ax.set_title("Connect Four variants at equal self-play positions (one line per seed)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    from azjax.cli.main import start_devices

    start_devices()  # AZJAX_CPU_DEVICES=2 splits the CPU as scripts/connect_four_hour.sh does, before JAX starts
    from azjax.checkpoint import earlier_commands, script_command, write_json
    from azjax.compile_cache import enable_compilation_cache
    from azjax.play.benchmarks import load_pons

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    if args.evals < 1 or args.evals > args.num_steps or args.seeds < 1:
        raise SystemExit("need 1 <= --evals <= --num_steps and --seeds >= 1")
    if args.checkpoint_every < 1:
        raise SystemExit(f"--checkpoint_every must be at least 1, not {args.checkpoint_every}")
    if args.minutes < 0 or (args.minutes and not args.checkpoint_dir):
        raise SystemExit("--minutes needs a value >= 0 and --checkpoint_dir (where the run in progress is kept)")
    if args.summarise:
        summary = json.loads(Path(args.out).read_text())
        variants = [v for v in VARIANTS if any(r["variant"] == v for r in summary["runs"])]
        summary.update(table=summarise(summary["runs"], variants), variants=variants,
                       summarised_by=script_command(__file__, argv))
        write_json(args.out, summary)
        plot(summary, args.plot)
        print_table(summary)
        return 0
    refuse_inert_variants(args)
    enable_compilation_cache()
    sets = load_pons(args.data, args.sets, args.limit)
    import jax

    summary: dict[str, Any] = dict(command=script_command(__file__, argv), args=vars(args),
                                   devices=[str(d) for d in jax.local_devices()],
                                   variant_switches={v: VARIANTS[v] for v in args.variants}, runs=[])
    if args.resume and Path(args.out).exists():
        previous = json.loads(Path(args.out).read_text())
        summary["runs"] = resumable_runs(previous, args, summary["devices"])
        # Where the kept runs came from: the commands that made them, and a rename's note.
        summary["earlier_commands"] = earlier_commands(previous, summary["command"])
        summary.update({k: previous[k] for k in ("renamed",) if k in previous})
        print(f"resuming: {len(summary['runs'])} runs already in {args.out}", flush=True)
    done = {(r["variant"], r["seed"]) for r in summary["runs"]}
    t0 = time.time()
    deadline = t0 + 60 * args.minutes if args.minutes else float("inf")

    def save() -> None:
        summary["table"] = summarise(summary["runs"], sorted({r["variant"] for r in summary["runs"]},
                                                             key=list(VARIANTS).index))
        summary["variants"] = list(summary["table"])
        summary["variant_switches"] = {v: VARIANTS[v] for v in summary["variants"]}
        summary["minutes"] = round((time.time() - t0) / 60, 1)
        write_json(args.out, summary)
        if args.plot:
            plot(summary, args.plot)

    for seed in range(args.seeds):  # seed-major: an interrupted sweep still compares every variant
        for name in args.variants:
            if (name, seed) not in done:
                try:
                    summary["runs"].append(run_one(name, seed, args, sets, deadline))
                except Stopped as e:
                    if summary["runs"]:
                        save()
                    print(f"stopped after --minutes {args.minutes:g}: {e} is checkpointed in {args.checkpoint_dir}; "
                          "go on with the same command and --resume", flush=True)
                    return 0
                save()  # after every run: a cut-short sweep keeps what it measured
    save()
    print_table(summary)
    print(f"wrote {args.out}")
    return 0


# The arguments a kept run must share with the resumed sweep, so that its curve is comparable.
RESUME_MUST_MATCH = ("preset", "num_steps", "evals", "sims", "sets", "limit", "mcts_games", "mcts_sims",
                     "probe_games", "override")


def resumable_runs(previous: dict[str, Any], args: argparse.Namespace, devices: list[str]) -> list[dict[str, Any]]:
    """The runs of an earlier sweep (`previous`, its JSON) that this one, on `devices`, keeps; SystemExit naming the
    first argument that differs (with its two values) if the earlier sweep graded differently, or its devices."""
    if previous.get("devices", devices) != devices:
        raise SystemExit(f"--resume: {args.out} ran on {previous['devices']}, this on {devices}; "
                         "set AZJAX_CPU_DEVICES as it was")
    before = {"preset": "quick", **previous.get("args", {})}  # files from before --preset existed: quick
    for key in RESUME_MUST_MATCH:
        if before.get(key) != getattr(args, key):
            raise SystemExit(f"--resume: {args.out} was made with --{key} {before.get(key)!r}, not "
                             f"{getattr(args, key)!r}; give another --out or the same arguments")
    # Every run is kept, also those of variants this sweep does not run: a committed measurement is never dropped.
    return [r for r in previous.get("runs", []) if r["variant"] in VARIANTS]


def print_table(summary: dict[str, Any]) -> None:
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}"  # noqa: E731
    for v, row in summary["table"].items():
        diff = ("" if "auc_minus_alphazero" not in row else
                f"  vs AZ {pct(row['auc_minus_alphazero'])} [{pct(row['diff_low'])}, {pct(row['diff_high'])}]")
        print(f"{v:<32} {row['seeds']} seeds  AUC {pct(row['auc_mean'])}% [{pct(row['auc_low'])}, "
              f"{pct(row['auc_high'])}]{diff}")


if __name__ == "__main__":
    raise SystemExit(main())
