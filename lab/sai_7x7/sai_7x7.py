"""Train 7x7 SAI (sigmoid-komi values, docs/methods.md section 2) and follow the empty-board score estimate.

    python -m lab.sai_7x7.sai_7x7 [--minutes 120] [--steps N] [--run_dir runs/sai_7x7]
                              [--out results/sai_7x7/sai_7x7.json] [--plot results/sai_7x7/sai_7x7.png]
                              [--model_dir results/models/go_7x7_sai] [--resume]
                              [--preset sai|sai_full] [any config field, e.g. --num_envs 64 --sensible_lambda 0]

Trains with the go_7x7 `sai` preset (value_head="sai"; sized for 2 CPU cores; `--preset sai_full` is the paper's
network size for one GPU; every config field can be overridden as in `azjax train`) until `--steps` loop steps
are done or `--minutes` of wall time have passed (a stopped run continues with `--resume`). The loop logs, before
each step's SGD, the net's sigmoid for the empty board with Black to move: alpha0, Black's expected lead on the
board (perfect play on 7x7: Black +9); with `--swa_decay` > 0 it is the averaged weights' read-out, and the
exported model holds the averaged weights.

Writes:
  --out        JSON: `empty_board_black_lead` ([seconds, estimate] per loop step), `empty_board_beta` and
               `alpha_std` / `beta_std` (head health: std of the heads' outputs over each SGD batch) likewise,
               `last_quarter` (min, max and mean of the estimate over the last quarter of the training time,
               and whether it stayed within +-1 of +9), `final_empty_board_black_lead` (the trained net's
               estimate), its beta and Black's winrate at komi 9.5, the run's size and config;
  --plot       PNG of the estimate, beta and the heads' std against training time (the line at +9 is the
               perfect-play result);
  --model_dir  the exported model (config.json + params.msgpack), usable by `azjax analyze/gtp/eval`.
A resumed run's --out keeps the commands that made the run before (`earlier_commands`); its `wall_seconds` are
this command's, its `training_seconds` the whole run's.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

PERFECT_PLAY_BLACK_LEAD = 9.0  # 7x7 Go: Black wins by 9 on the board with perfect play
SAI_PRESETS = ("sai", "sai_full")  # the go_7x7 presets with SAI's value head


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from azjax.config import config_flags

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=120.0, help="wall-time budget of the training (default 120)")
    p.add_argument("--steps", type=int, default=None, help="loop steps (default: the preset's num_steps)")
    p.add_argument("--run_dir", default="runs/sai_7x7", help="run directory (checkpoints, metrics.csv)")
    p.add_argument("--out", default="results/sai_7x7/sai_7x7.json")
    p.add_argument("--plot", default="results/sai_7x7/sai_7x7.png")
    p.add_argument("--model_dir", default="results/models/go_7x7_sai")
    p.add_argument("--resume", action="store_true", help="continue the run in --run_dir")
    p.add_argument("--preset", default="sai", choices=SAI_PRESETS,
                   help="the go_7x7 preset to start from: sai (2 CPU cores, about an hour) or sai_full (one GPU)")
    p.add_argument("--training_command", default=None,
                   help="with --report_only: the command that trained the run in --run_dir, recorded in --out")
    p.add_argument("--report_only", action="store_true",
                   help="train nothing: write --out, --plot and --model_dir from the run in --run_dir as it stands")
    config_flags(p)
    return p.parse_args(argv)


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config fields the command line sets (`--steps` as num_steps); value_head must stay SAI's."""
    from azjax.config import config_overrides as overrides

    fields = overrides(args)
    if fields.get("value_head", "sai") != "sai":
        raise SystemExit("sai_7x7.py trains SAI networks: value_head must stay 'sai'")
    if args.steps is not None:
        fields["num_steps"] = args.steps
    return fields


def fresh_config(args: argparse.Namespace) -> Any:
    """The config of a new run: the chosen go_7x7 SAI preset with the command line's fields."""
    from azjax.config import preset

    return preset("go_7x7", args.preset, **config_overrides(args))


def empty_board_estimate(config: Any, params: Any) -> Any:
    """The SAI read-out of the empty board (Black to move, the config's komi)."""
    import jax

    from azjax.build import board_game, sai_readout

    game = board_game(config)
    return sai_readout(config, game, params, game.init(jax.random.key(0)))


def series(rows: list[dict[str, Any]], column: str) -> list[list[float]]:
    """[seconds, value] for each metrics row where `column` is finite."""
    return [[float(r["time_s"]), float(r[column])] for r in rows if math.isfinite(float(r[column]))]


def last_quarter(pairs: list[list[float]]) -> dict[str, Any]:
    """The estimate over the last quarter of the training time, against perfect play's +9."""
    if not pairs:
        return {}
    end = pairs[-1][0]
    tail = [v for t, v in pairs if t >= 0.75 * end]
    return {"from_seconds": 0.75 * end, "to_seconds": end, "min": min(tail), "max": max(tail),
            "mean": sum(tail) / len(tail),
            "within_1_of_perfect_play": all(abs(v - PERFECT_PLAY_BLACK_LEAD) <= 1.0 for v in tail)}


def plot(curves: dict[str, list[list[float]]], file: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from azjax.train.plots import save_figure

    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, height_ratios=[2, 1])
    pairs = curves["empty_board_black_lead"]
    ax.plot([t / 60 for t, _ in pairs], [v for _, v in pairs], lw=1.2, label="empty board: Black's expected board lead")
    ax.axhline(PERFECT_PLAY_BLACK_LEAD, color="k", ls="--", lw=0.8, label="perfect play (Black +9)")
    ax.set_ylabel("alpha0 (points)")
    ax.set_title(title, fontsize="medium", wrap=True)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    for name, style in (("empty_board_beta", "-"), ("alpha_std", "--"), ("beta_std", ":")):
        ax2.plot([t / 60 for t, _ in curves[name]], [v for _, v in curves[name]], style, lw=1.0, label=name)
    ax2.set_yscale("log")
    ax2.set_xlabel("training time (minutes)")
    ax2.grid(alpha=0.3)
    ax2.legend(loc="upper right", fontsize=8)
    save_figure(fig, file)


def main(argv: list[str] | None = None) -> int:
    from azjax.cli.main import start_devices

    start_devices()  # AZJAX_CPU_DEVICES=2: one JAX device a core, before anything starts JAX's backend
    args = parse_args(argv)
    import jax

    from azjax import checkpoint as ckpt
    from azjax.build import load_model as load_checkpoint
    from azjax.checkpoint import earlier_commands, script_command
    from azjax.compile_cache import enable_compilation_cache
    from azjax.train import load_metrics, train

    enable_compilation_cache()
    overrides = config_overrides(args)
    run_dir = Path(args.run_dir)
    t0 = time.perf_counter()
    if args.report_only:
        config = ckpt.load_config(run_dir)
        last = load_metrics(run_dir)[0][-1]
        summary = {"step": int(last["step"]), "finished": int(last["step"]) >= config.num_steps}
    elif args.resume:
        config = ckpt.load_config(run_dir).replace(**overrides) if overrides else None
        summary = train(config, run_dir, resume=True, progress=False, time_budget_s=args.minutes * 60)
    else:
        config = fresh_config(args)
        summary = train(config, run_dir, progress=False, time_budget_s=args.minutes * 60)
    seconds = time.perf_counter() - t0

    rows, _ = load_metrics(run_dir)
    curves = {c: series(rows, c) for c in ("empty_board_black_lead", "empty_board_beta", "alpha_std", "beta_std")}
    pairs = curves["empty_board_black_lead"]
    config, params = load_checkpoint(str(run_dir))
    final = empty_board_estimate(config, params)
    model = ckpt.export_model(run_dir, args.model_dir)

    def total(column: str) -> int:  # rows rebuilt from TensorBoard events hold no counts (nan)
        return int(sum(v for r in rows if math.isfinite(v := float(r[column]))))

    games = total("games")
    result = {
        **curves,
        "last_quarter": last_quarter(pairs),
        "final_empty_board_black_lead": final.black_lead,
        "final_empty_board_beta": final.beta,
        "final_black_winrate_at_official_komi": final.black_winrate(),
        "official_komi": final.komi,
        "perfect_play_black_lead": PERFECT_PLAY_BLACK_LEAD,
        "steps": int(summary["step"]),
        "finished": bool(summary["finished"]),
        "games": games,
        "branch_starts": total("branch_starts"),
        "rows_without_counts": sum(not math.isfinite(float(r["games"])) for r in rows),
        "training_seconds": pairs[-1][0] if pairs else 0.0,
        "wall_seconds": round(seconds, 1),
        "run_dir": str(run_dir),
        "model_dir": str(model),
        "config": config.to_dict(),
        "devices": [str(d) for d in jax.local_devices()],
        "command": script_command(__file__, argv),
        "training_command": args.training_command if args.report_only else script_command(__file__, argv),
    }
    if (args.resume or args.report_only) and Path(args.out).exists():
        previous = ckpt.read_json(args.out)
        if previous.get("run_dir") == str(run_dir):  # the same run, gone on: keep the commands that made it so far
            result["earlier_commands"] = earlier_commands(previous, result["command"])
    ckpt.write_json(args.out, result)
    averaged = f", weights averaged with swa_decay {config.swa_decay:g}" if config.swa_decay > 0 else ""
    plot(curves, Path(args.plot),
         f"7x7 SAI: empty-board score estimate ({summary['step']} steps, {games} games{averaged})")
    print(f"empty board: Black {final.black_lead:+.2f} on the board (beta {final.beta:.3f}, Black wins "
          f"{final.black_winrate():.1%} at komi {final.komi:g}) after {summary['step']} steps, {games} games; "
          f"wrote {args.out}, {args.plot}, {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
