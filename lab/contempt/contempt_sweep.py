"""Search-contempt self-play sweep: (w+l)/d and repeated game prefixes against n_scl and temperature.

Plays a batch of self-play games (the same agent on both sides, `arena.play_games`) for every
(tau, n_scl) setting and records the paper's measures (docs/methods.md section 1; `azjax.play.selfplay_stats`):
w / d / l from the first mover's (White's) view, (w+l)/d, and the fraction of games whose first m
moves repeat an earlier game's, m = 1..M.

    python -m lab.contempt.contempt_sweep --checkpoint results/models/connect_four_quick --games 64 --sims 64
    python -m lab.contempt.contempt_sweep --game chess --evaluator material --games 32 --sims 64 --max_moves 120 \\
        --adjudicate 3

Games cut by `--max_moves` (plies) count as draws; with `--adjudicate P` (chess) the JSON also holds
an adjudicated w / d / l where a cut game with a material edge of at least P pawns is a win for
the side ahead. Writes `--out` (JSON) and `--plot` (PNG, two panels).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def parse_n_scl(text: str) -> int:
    """n_scl from the command line: an integer >= 1, or off (also 0, none, inf): 0, as in the config."""
    if text.lower() in ("off", "none", "inf", "0"):
        return 0
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"n_scl must be >= 1 or 'off', got {text}")
    return value


def parse_setting(text: str) -> tuple[int, float]:
    if ":" not in text:
        raise argparse.ArgumentTypeError(f"a setting is N_SCL:TAU (e.g. 5:0 or off:1), got {text!r}")
    n, tau = text.split(":", 1)
    return parse_n_scl(n), float(tau)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", help="run directory or exported model (azjax.build.load_model)")
    src.add_argument("--game", help="a game for a non-network evaluator (chess with --evaluator material)")
    p.add_argument("--evaluator", default="material", choices=["material"], help="with --game (default material)")
    p.add_argument("--start", default="standard", help="chess start: standard, an odds start or a FEN")
    p.add_argument("--games", type=int, default=32, help="self-play games per setting (even)")
    p.add_argument("--batch", type=int, default=None, help="games per batch (even; default all)")
    p.add_argument("--sims", type=int, default=64, help="simulations per move")
    p.add_argument("--search", default="puct", choices=["puct", "gumbel"])
    p.add_argument("--n_scl", nargs="+", type=parse_n_scl, default=[1, 2, 5, 8, 16, 32, 64, 0],
                   help="n_scl values; 'off' = plain search (default 1 2 5 8 16 32 64 off)")
    p.add_argument("--temps", nargs="+", type=float, default=[0.0, 1.0], help="move temperatures tau (0 = greedy)")
    p.add_argument("--settings", nargs="+", type=parse_setting, default=None, metavar="N_SCL:TAU",
                   help="explicit (n_scl, tau) pairs, e.g. 1:0 5:0 off:0 off:1 (replaces the --n_scl x --temps grid)")
    p.add_argument("--temperature_moves", type=int, default=None,
                   help="tau applies to the first K plies, then greedy (default: the whole game)")
    p.add_argument("--noise", type=float, default=0.0, help="root Dirichlet fraction (default 0: no noise)")
    p.add_argument("--max_moves", type=int, default=None, help="ply cap (cut games are draws; default the game's)")
    p.add_argument("--adjudicate", type=float, default=None,
                   help="chess: also score cut games by a material edge of at least this many pawns")
    p.add_argument("--max_prefix", type=int, default=40, help="longest prefix M for the repeat fraction")
    p.add_argument("--scale", type=float, default=None, help="material evaluator: tanh scale (default 0.2)")
    p.add_argument("--mobility", type=float, default=0.0, help="material evaluator: pawns per legal move")
    p.add_argument("--capture_prior", type=float, default=0.0, help="material evaluator: prior logit per pawn captured")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--replot", action="store_true", help="only redraw --plot from an existing --out JSON")
    p.add_argument("--out", default="results/contempt/contempt_sweep.json")
    p.add_argument("--plot", default="results/contempt/contempt_sweep.png", help="PNG path ('' = no plot)")
    return p


def setup(args: argparse.Namespace) -> tuple[Any, Any, Any, dict[str, Any], float]:
    """(game, evaluator, evaluator params, description, pb_c_init)."""
    from azjax.games import make_game

    if args.checkpoint:
        from azjax.build import load_model, make_network, play_game
        from azjax.search import network_evaluator

        config, params = load_model(args.checkpoint)
        game = play_game(config)
        evaluate = network_evaluator(make_network(config, game).apply)
        desc = dict(source="checkpoint", checkpoint=args.checkpoint, game=config.game)
        return game, evaluate, params, desc, config.pb_c_init
    if args.game != "chess":
        raise SystemExit(f"--evaluator {args.evaluator} needs --game chess (got {args.game!r}); "
                         "use --checkpoint for other games")
    from azjax.play.material import DEFAULT_SCALE, material_evaluator

    scale = DEFAULT_SCALE if args.scale is None else args.scale
    game = make_game("chess", start=args.start)
    evaluate = material_evaluator(scale=scale, mobility=args.mobility, capture_prior=args.capture_prior)
    desc = dict(source="evaluator", evaluator="material", game="chess", start=args.start, scale=scale,
                mobility=args.mobility, capture_prior=args.capture_prior)
    return game, evaluate, None, desc, 1.25


def run(args: argparse.Namespace) -> dict[str, Any]:
    import jax
    import numpy as np

    from azjax.checkpoint import script_command, write_json
    from azjax.compile_cache import enable_compilation_cache
    from azjax.play.arena import match
    from azjax.play.selfplay_stats import (
        first_player_outcomes,
        replay_moves,
        selfplay_params,
        selfplay_stats,
        temperature_agent,
    )
    from azjax.search import SearchSpec

    if args.games < 2 or args.games % 2:
        raise SystemExit(f"--games must be even and >= 2, got {args.games}")
    if not jax.config.jax_compilation_cache_dir:  # keep a cache the caller (e.g. the tests) set up
        enable_compilation_cache()
    t_start = time.time()
    game, evaluate, eval_params, desc, pb_c_init = setup(args)
    if args.max_moves is not None:
        if args.max_moves < 1:
            raise SystemExit("--max_moves must be >= 1")
        game = dataclasses.replace(game, max_moves=min(args.max_moves, game.max_moves))
    if args.adjudicate is not None and desc["game"] != "chess":
        raise SystemExit("--adjudicate applies to chess only")
    spec = SearchSpec(kind=args.search, num_simulations=args.sims, pb_c_init=pb_c_init,
                      dirichlet_fraction=args.noise, gumbel_scale=1.0 if args.noise else 0.0)
    plain = temperature_agent(game, evaluate, spec, params=eval_params)
    contempt = temperature_agent(game, evaluate, dataclasses.replace(spec, n_scl=1), params=eval_params)
    key = jax.random.key(args.seed)
    settings = []
    grid = args.settings or [(n, tau) for tau in args.temps for n in args.n_scl]
    if any(tau < 0 for _, tau in grid):
        raise SystemExit("temperatures must be >= 0")
    for n_scl, tau in grid:
        agent = (contempt if n_scl else plain).with_params(
            selfplay_params(eval_params, n_scl, tau, args.temperature_moves),
            name=f"scl{n_scl or 'off'}-tau{tau:g}",
        )
        t0 = time.time()
        # Common random numbers: every setting plays from the same key.
        result = match(game, agent, agent, args.games, key, batch_size=args.batch)
        records = result.records
        stats = selfplay_stats(records, max_prefix=min(args.max_prefix, game.max_moves))
        row: dict[str, Any] = dict(
            n_scl=n_scl or "off", tau=tau, temperature_moves=args.temperature_moves,
            sims=args.sims, **stats.to_dict(), illegal=int(np.asarray(records.illegal).sum()),
        )
        if args.adjudicate is not None:
            from azjax.play.material import adjudicate_by_material
            from azjax.play.selfplay_stats import decisive_ratio, json_float, wdl

            final = replay_moves(game, records.moves)
            judged = adjudicate_by_material(final, records.length, records.terminated,
                                            first_player_outcomes(records), args.adjudicate)
            wins, draws, losses = wdl(judged)
            row["adjudicated"] = dict(threshold_pawns=args.adjudicate, wins=wins, draws=draws, losses=losses,
                                      decisive_ratio=json_float(decisive_ratio(wins, draws, losses)))
        row["seconds"] = round(time.time() - t0, 1)
        settings.append(row)
        write_json(args.out, dict(partial=True, command=script_command(__file__),
                                   settings=settings))
        adj = row.get("adjudicated")
        extra = ""
        if adj:
            extra = f" | adjudicated +{adj['wins']} ={adj['draws']} -{adj['losses']} ratio {adj['decisive_ratio']}"
        print(f"tau {tau:g} n_scl {row['n_scl']!s:>4}: +{row['wins']} ={row['draws']} -{row['losses']} "
              f"(unfinished {row['unfinished']}) (w+l)/d {row['decisive_ratio']} len {row['mean_length']:.0f} "
              f"repeat@1,5,10 {_at(row['repeat_fraction'], [1, 5, 10])}{extra} [{row['seconds']}s]", flush=True)
    return dict(
        command=script_command(__file__),
        args={k: v for k, v in vars(args).items()},
        setup=desc,
        search=dict(kind=spec.kind, num_simulations=spec.num_simulations, pb_c_init=spec.pb_c_init,
                    dirichlet_fraction=spec.dirichlet_fraction),
        max_moves=game.max_moves,
        notes=("w/d/l from the first mover's (White's) view; games cut by max_moves count as draws "
               "('unfinished'); decisive_ratio = (w+l)/d ('inf' if d = 0 < w+l, 'nan' without games); "
               "repeat_fraction[m-1] = fraction of games whose first m plies repeat an earlier game's "
               "(batch order, denominator = games); every setting plays from the same PRNG key; "
               "n_scl 'off' = plain search."),
        settings=settings,
        seconds=round(time.time() - t_start, 1),
        devices=[str(d) for d in jax.devices()],
    )


def _at(values: list[float], ms: list[int]) -> str:
    return ",".join(f"{values[m - 1]:.2f}" if m <= len(values) else "-" for m in ms)


def _ratio(value: Any) -> float:
    return float(value) if not isinstance(value, str) else (math.inf if value == "inf" else math.nan)


def plot(summary: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from azjax.train.plots import save_figure

    rows = summary["settings"]
    temps = sorted({r["tau"] for r in rows})
    scls = [s for s in dict.fromkeys(r["n_scl"] for r in rows)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ratios = [_ratio(r["decisive_ratio"]) for r in rows]
    ratios += [_ratio(r["adjudicated"]["decisive_ratio"]) for r in rows if "adjudicated" in r]
    finite = [x for x in ratios if math.isfinite(x)]
    top = max(finite + [1.0]) * 1.15
    for i, tau in enumerate(temps):
        c = colors[i % len(colors)]
        pts = sorted((r["n_scl"], _ratio(r["decisive_ratio"])) for r in rows if r["tau"] == tau and r["n_scl"] != "off")
        if pts:
            xs = [x for x, _ in pts]
            ys = [min(y, top) if not math.isnan(y) else float("nan") for _, y in pts]
            ax1.plot(xs, ys, "o-", color=c, label=f"search-contempt, tau={tau:g}")
            for x, (_, y) in zip(xs, pts, strict=True):
                if math.isinf(y):
                    ax1.annotate("inf", (x, top), textcoords="offset points", xytext=(0, 4), ha="center", color=c)
        off = [_ratio(r["decisive_ratio"]) for r in rows if r["tau"] == tau and r["n_scl"] == "off"]
        if off and not math.isnan(off[0]):
            ax1.axhline(min(off[0], top), color=c, ls="--", label=f"plain search (off), tau={tau:g}")
        adj = sorted((r["n_scl"], _ratio(r["adjudicated"]["decisive_ratio"])) for r in rows
                     if r["tau"] == tau and r["n_scl"] != "off" and "adjudicated" in r)
        if adj:
            ax1.plot([x for x, _ in adj], [min(y, top) for _, y in adj], "s:", color=c, mfc="none",
                     label=f"adjudicated by material, tau={tau:g}")
        adj_off = [_ratio(r["adjudicated"]["decisive_ratio"]) for r in rows
                   if r["tau"] == tau and r["n_scl"] == "off" and "adjudicated" in r]
        if adj_off and not math.isnan(adj_off[0]):
            ax1.axhline(min(adj_off[0], top), color=c, ls=":", label=f"off, adjudicated, tau={tau:g}")
    ax1.set_xscale("log")
    ticks = sorted({r["n_scl"] for r in rows if r["n_scl"] != "off"})
    if ticks:
        ax1.set_xticks(ticks, [str(t) for t in ticks])
        ax1.minorticks_off()
    ax1.set_xlabel("n_scl")
    ax1.set_ylabel("(w + l) / d")
    sp = summary["search"]
    ax1.set_title(f"{summary['setup'].get('game')}: self-play, {sp['num_simulations']} sims, "
                  f"{rows[0]['games']} games/setting")
    ax1.grid(alpha=0.3, which="both")
    ax1.legend(fontsize=8)
    styles = ["-", "--", ":", "-."]
    for j, s in enumerate(scls):
        for i, tau in enumerate(temps):
            for r in rows:
                if r["n_scl"] == s and r["tau"] == tau:
                    y = r["repeat_fraction"]
                    ax2.plot(range(1, len(y) + 1), y, styles[i % len(styles)], color=colors[j % len(colors)],
                             label=f"n_scl={s}, tau={tau:g}")
    ax2.set_xlabel("move number (plies) m")
    ax2.set_ylabel("fraction of games repeating an earlier game's first m moves")
    ax2.set_ylim(-0.02, 1.02)
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=7, ncol=2)
    save_figure(fig, path)


def report(args: argparse.Namespace, run: Callable[[], dict[str, Any]],
           plot: Callable[[dict[str, Any], str], None]) -> int:
    """A sweep script's main: redraw --plot from --out (--replot), or run, write --out and draw --plot."""
    from azjax.checkpoint import write_json

    if args.replot:
        plot(json.loads(Path(args.out).read_text()), args.plot)
        print(f"wrote {args.plot}")
        return 0
    summary = run()
    write_json(args.out, summary)
    print(f"wrote {args.out}")
    if args.plot:
        plot(summary, args.plot)
        print(f"wrote {args.plot}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return report(args, lambda: run(args), plot)


if __name__ == "__main__":
    raise SystemExit(main())
