"""Black's self-play winrate against komi for a SAI Go model, next to the sigmoid its network predicts for the
empty board: the data that pins SAI's empty-board estimate (docs/methods.md section 2).

    python -m lab.sai_7x7.sai_komi_curve results/models/go_7x7_sai [--komis -10.5 -0.5 4.5 8.5 9.5 14.5 19.5 29.5]
        [--games 128] [--simulations N] [--temperature_moves N] [--gumbel_scale G] [--seed 0]
        [--out results/sai_7x7/sai_7x7_komi_curve.json] [--plot results/sai_7x7/sai_7x7_komi_curve.png]

SAI trains the empty-board sigmoid rho(k) = sigmoid(beta0 (alpha0 - k)) (Black's winrate at komi k) on
self-play games whose komi is drawn around alpha0, so alpha0 settles where Black's self-play winrate is
1/2. That point is perfect play's +9 (7x7) only when the self-play agent plays 7x7 perfectly: Black then
wins every game at komi 8.5 and loses every game at 9.5 (beta -> infinity). This script measures what
the agent actually does: at each komi it plays `--games` games from the empty board between the model and
itself as the training loop does (the training search with its root noise at the model's visits, moves
drawn from the search's policy target inside the temperature window, then the search's own choice), and
fits Black's results with the same two-parameter sigmoid by maximum likelihood.

Writes --out (JSON): per komi Black's score (wins + draws / 2, games cut by the move cap are draws) with its
95% Wilson interval, Black's mean board lead and the net's predicted winrate; the self-play fit
(`selfplay_fit`: the komi where Black scores 1/2, with a 95% binomial-bootstrap interval, and the slope);
the net's empty-board alpha0 and beta0; the command. --plot: the points, the fit and the net's sigmoid.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from typing import Any

import numpy as np
from scipy.special import expit as sigmoid  # the logistic function, without overflow warnings

DEFAULT_KOMIS = (-10.5, -0.5, 4.5, 8.5, 9.5, 14.5, 19.5, 29.5)
PERFECT_PLAY_BLACK_LEAD = {"go_7x7": 9.0}  # Black's board lead under perfect play, where it is known
MAX_SLOPE = 20.0  # the fit's bound on beta: data separated at one komi step would drive it to infinity


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a SAI model or run directory (value_head='sai')")
    p.add_argument("--komis", type=float, nargs="+", default=list(DEFAULT_KOMIS))
    p.add_argument("--games", type=int, default=128, help="games per komi (even: the agent plays itself)")
    p.add_argument("--simulations", type=int, default=None,
                   help="visits per move (default: the model's training visits)")
    p.add_argument("--temperature_moves", type=int, default=None,
                   help="plies drawn from the policy target (default: the model's temperature window)")
    p.add_argument("--gumbel_scale", type=float, default=None,
                   help="Gumbel search's root noise scale in self-play (default: the model's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/sai_7x7/sai_7x7_komi_curve.json")
    p.add_argument("--plot", default=None, help="PNG of the curve (default: none)")
    args = p.parse_args(argv)
    if args.games < 2 or args.games % 2:
        p.error(f"--games must be even and >= 2, got {args.games}")
    for k in args.komis:
        if not math.isfinite(k) or float(k).is_integer():
            p.error(f"komis must be finite half-integers (no jigo), got {k}")
    return args


def fit_sigmoid(komis: np.ndarray, scores: np.ndarray, games: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood (alpha, beta) of Black's score s_k ~ sigmoid(beta (alpha - k)) at each komi k.

    komis, scores (Black's score in [0, 1]), games: float [K]. beta is kept in (0, MAX_SLOPE]: a winrate
    that falls from 1 to 0 between two komis would push it to infinity (then alpha is their midpoint).
    """
    from scipy.optimize import minimize

    wins = scores * games

    def nll(theta: np.ndarray) -> float:
        alpha, beta = theta[0], MAX_SLOPE * sigmoid(theta[1])
        z = beta * (alpha - komis)
        # -log sigmoid(z) = logaddexp(0, -z): stable for large |z|
        return float(np.sum(wins * np.logaddexp(0.0, -z) + (games - wins) * np.logaddexp(0.0, z)))

    start = komis[np.argmin(np.abs(scores - 0.5))]
    best = min((minimize(nll, np.array([start, s]), method="Nelder-Mead",
                         options=dict(xatol=1e-4, fatol=1e-9, maxiter=4000)) for s in (-4.0, 0.0, 4.0)),
               key=lambda r: r.fun)
    return float(best.x[0]), float(MAX_SLOPE * sigmoid(best.x[1]))


def bootstrap_alpha(komis: np.ndarray, scores: np.ndarray, games: np.ndarray, rng: np.random.Generator,
                    resamples: int = 300) -> tuple[float, float]:
    """95% percentile interval of the fitted alpha when each komi's wins are redrawn Binomial(n, score)."""
    alphas = [fit_sigmoid(komis, rng.binomial(games.astype(int), scores) / games, games)[0]
              for _ in range(resamples)]
    return float(np.percentile(alphas, 2.5)), float(np.percentile(alphas, 97.5))


def selfplay_at_komi(game: Any, agent: Any, komi: float, games: int, seed: int) -> dict[str, Any]:
    """Black's results in `games` self-play games of `agent` (the training loop's self-play) at `komi`.

    The komi is an argument of the one compiled match, so the sweep compiles once.
    """
    import jax

    from azjax.games import board_arrays, board_lead_black
    from azjax.play.arena import play_games, wilson_interval
    from azjax.play.selfplay_stats import first_player_outcomes, replay_moves

    records = play_games(game, agent, agent, jax.random.key(seed), games, komi=komi)
    black = first_player_outcomes(records)
    final = replay_moves(game, np.asarray(records.moves))
    lead = np.asarray(jax.vmap(board_lead_black, (0, None))(board_arrays(final), game.size))
    wins, draws = int(np.sum(black > 0)), int(np.sum(black == 0))
    score = (wins + draws / 2) / games
    low, high = wilson_interval(score, games)
    return dict(komi=komi, games=games, black_wins=wins, draws=draws,
                unfinished=int(np.sum(~np.asarray(records.terminated))), black_score=score, black_score_low=low,
                black_score_high=high, mean_black_lead=float(lead.mean()), median_black_lead=float(np.median(lead)),
                mean_length=float(np.mean(records.length)))


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    import jax

    from azjax.build import board_game, cached_evaluator, game_named, load_model, sai_readout, search_spec
    from azjax.compile_cache import enable_compilation_cache
    from azjax.play.selfplay_stats import temperature_agent

    if not jax.config.jax_compilation_cache_dir:
        enable_compilation_cache()
    config, params = load_model(args.model)
    if config.value_head != "sai":
        raise SystemExit(f"{args.model} is not a SAI model (value_head={config.value_head!r})")
    config = dataclasses.replace(
        config, num_simulations=args.simulations or config.num_simulations,
        gumbel_scale=config.gumbel_scale if args.gumbel_scale is None else args.gumbel_scale)
    window = config.temperature_moves if args.temperature_moves is None else args.temperature_moves
    board = board_game(config)
    net = sai_readout(config, board, params, board.init(jax.random.key(0)))
    game = game_named(config.game)
    agent = temperature_agent(game, cached_evaluator(config, game), search_spec(config, training=True), tau=1.0,
                              temperature_moves=window, params=params)
    rows = []
    for i, komi in enumerate(sorted(args.komis)):
        row = selfplay_at_komi(game, agent, komi, args.games, args.seed * 1000 + i)
        row["net_black_winrate"] = net.black_winrate(komi)
        rows.append(row)
        print(f"komi {komi:+6.1f}: Black scores {row['black_score']:.3f} [{row['black_score_low']:.3f}, "
              f"{row['black_score_high']:.3f}] (net {row['net_black_winrate']:.3f}), mean board lead "
              f"{row['mean_black_lead']:+.1f}", flush=True)
    komis, scores = np.array([r["komi"] for r in rows]), np.array([r["black_score"] for r in rows])
    games = np.full(len(rows), float(args.games))
    alpha, beta = fit_sigmoid(komis, scores, games)
    low, high = bootstrap_alpha(komis, scores, games, np.random.default_rng(args.seed))
    summary = dict(
        command=command,
        model=args.model,
        game=config.game,
        simulations=config.num_simulations,
        temperature_moves=window,
        gumbel_scale=config.gumbel_scale,
        games_per_komi=args.games,
        net=dict(empty_board_black_lead=net.black_lead, empty_board_beta=net.beta),
        selfplay_fit=dict(black_lead=alpha, black_lead_low=low, black_lead_high=high, beta=beta,
                          beta_bound=MAX_SLOPE),
        perfect_play_black_lead=PERFECT_PLAY_BLACK_LEAD.get(config.game),
        komis=rows,
        notes=("self-play as in training: training search (root noise), moves drawn from the policy target for the "
               "first temperature_moves plies, then the search's own choice; Black's score = (wins + draws/2) / games "
               "with 95% Wilson intervals; selfplay_fit: maximum-likelihood sigmoid(beta (black_lead - komi)) through "
               "the scores, its black_lead interval from 300 binomial resamples; net: the empty-board read-out"),
    )
    print(f"self-play: Black scores 1/2 at komi {alpha:.2f} [{low:.2f}, {high:.2f}] (slope {beta:.3f}); "
          f"net's estimate {net.black_lead:.2f} (slope {net.beta:.3f})", flush=True)
    return summary


def plot(summary: dict[str, Any], file: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["komis"]
    k = np.array([r["komi"] for r in rows])
    grid = np.linspace(k.min() - 2, k.max() + 2, 200)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.errorbar(k, [r["black_score"] for r in rows],
                yerr=[[r["black_score"] - r["black_score_low"] for r in rows],
                      [r["black_score_high"] - r["black_score"] for r in rows]],
                fmt="o", capsize=3, label=f"self-play ({summary['games_per_komi']} games a komi)")
    fit, net = summary["selfplay_fit"], summary["net"]
    ax.plot(grid, sigmoid(fit["beta"] * (fit["black_lead"] - grid)),
            label=f"fit: 1/2 at {fit['black_lead']:.1f} [{fit['black_lead_low']:.1f}, {fit['black_lead_high']:.1f}]")
    ax.plot(grid, sigmoid(net["empty_board_beta"] * (net["empty_board_black_lead"] - grid)), "--",
            label=f"net's sigmoid: alpha0 {net['empty_board_black_lead']:.1f}, beta0 {net['empty_board_beta']:.3f}")
    if summary["perfect_play_black_lead"] is not None:
        ax.axvline(summary["perfect_play_black_lead"], color="k", lw=0.8, ls=":", label="perfect play")
    ax.set_xlabel("komi")
    ax.set_ylabel("Black's score in self-play")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{summary['game']} SAI: Black's self-play score against komi ({summary['simulations']} visits)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(file, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json

    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    summary = run(args, script_command(__file__, argv))
    write_json(args.out, summary)
    if args.plot:
        plot(summary, args.plot)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
