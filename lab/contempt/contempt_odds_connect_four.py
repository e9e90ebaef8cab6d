"""Search-contempt's odds experiment on Connect Four: a trained network plays SECOND (the theoretically
lost side, the "giver") against a weaker opponent, plain PUCT against search-contempt PUCT, as visits grow.

The paper (odds chess; docs/methods.md section 1) finds plain PUCT's score against a weaker opponent
peaking and then falling as visits grow (deeper search assumes a perfect opponent and sees every
line as lost), while search-contempt with N_scl = 28 keeps gaining.

    python -m lab.contempt.contempt_odds_connect_four --checkpoint results/models/connect_four_quick \\
        --opponent mcts:200 --visits 100 400 1600 6400 --n_scl off 28 5 --games 100
    azjax export RUN runs/early --step 50   # an early checkpoint of the same run as the weaker opponent
    python -m lab.contempt.contempt_odds_connect_four --checkpoint RUN --opponent runs/early:64 --games 200

The giver searches with PUCT (`azjax.play.selfplay_stats.temperature_agent`, greedy, no root noise, the
checkpoint's c_puct) and `n_scl` off (plain) or N (`azjax.search.contempt`). The opponent is an `azjax arena`
spec (`mcts:N`, `PATH[:N]`, `policy:PATH`, `random`) whose first `--random_moves` moves are uniformly
random. Every game of a cell runs in one jitted batch (`azjax.play.tournament.play_games_from`): half of
the batch starts from the opponent's random first move with the giver to move, the other half from
the empty board with the opponent to move (the arena's batch puts a different side first after the
start in each half), so the giver is always the second player. Every cell plays from the same key.

Writes `--out` (JSON: per cell W/D/L from the giver's view, score = (w + d/2) / games with its 95%
Wilson interval, wall seconds, distinct games) and `--plot` (score against visits, log x, 95% bands).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from typing import Any

import numpy as np

from lab.contempt.contempt_sweep import parse_n_scl, report


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", help="the giver's network: run directory or exported model (required to play)")
    p.add_argument("--opponent", default="mcts:200", help="azjax arena spec of the weaker first player")
    p.add_argument("--opponent_simulations", type=int, default=64, help="simulations of a PATH opponent without :N")
    p.add_argument("--random_moves", type=int, default=2, help="the opponent's first K moves are random (K >= 1)")
    p.add_argument("--visits", nargs="+", type=int, default=[100, 400, 1600, 6400], help="the giver's visits per move")
    p.add_argument("--n_scl", nargs="+", type=parse_n_scl, default=[0, 28, 5],
                   help="the giver's settings: 'off' = plain PUCT, or search-contempt's N_scl (default off 28 5)")
    p.add_argument("--games", type=int, default=100, help="games per cell (even)")
    p.add_argument("--batch", type=int, default=None, help="games per batch (even; default a whole cell)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--replot", action="store_true", help="only redraw --plot from an existing --out JSON")
    p.add_argument("--out", default="results/contempt/contempt_odds_connect_four.json")
    p.add_argument("--plot", default="results/contempt/contempt_odds_connect_four.png", help="PNG path ('' = no plot)")
    return p


@functools.cache
def random_start_act(act: Any, random_plies: int) -> Any:
    """`act` of an agent whose moves at `state.move_number < random_plies` are uniformly random (jittable)."""
    import jax
    import jax.numpy as jnp

    from azjax.play.agents import random_legal_actions

    def wrapped(params: Any, key: jax.Array, states: Any) -> jax.Array:
        own_key, random_key = jax.random.split(key)
        chosen = act(params, own_key, states)
        random = random_legal_actions(random_key, states.legal_action_mask)
        return jnp.where(states.move_number < random_plies, random, chosen).astype(jnp.int32)

    return wrapped


def start_states(game: Any, num_games: int, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """GameState [N] for one batch and the pre-played moves int32 [N, 1] (-1 = none): rows [0, N/2)
    after a uniformly random first move (the giver, the arena's A, moves first from there), rows
    [N/2, N) the empty board (the opponent, B, moves first)."""
    from azjax.play.selfplay_stats import replay_moves

    half = num_games // 2
    first = np.full((num_games, 1), -1, np.int32)
    first[:half, 0] = rng.integers(0, game.num_actions, half)  # every column is legal on the empty board
    return replay_moves(game, first), first


def play_cell(game: Any, giver: Any, opponent: Any, num_games: int, batch: int, seed: int) -> dict[str, Any]:
    """All `num_games` games of one cell (batches of `batch`, one compiled program).

    Returns the giver's `arena.MatchResult` fields, `distinct_games` and `games`: per game the moves
    as columns 1-7 from the empty board (pre-played move included) and the giver's result.
    """
    import jax

    from azjax.play.arena import summarize
    from azjax.play.tournament import play_games_from

    rng = np.random.default_rng(seed)  # the same openings and keys in every cell
    key = jax.random.key(seed)
    parts, moves = [], []
    for _ in range(num_games // batch):
        states, first = start_states(game, batch, rng)
        key, sub = jax.random.split(key)
        records, _ = play_games_from(game, giver, opponent, sub, states, game.max_moves)
        parts.append(records)
        played = np.concatenate([first, records.moves], axis=1)  # pre-played move, then the game's
        moves += ["".join(str(int(m) + 1) for m in row if m >= 0) for row in played]
    records = jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
    row = summarize(records, giver.name, opponent.name).to_dict()
    del row["first_score"]  # the giver is always the second player here
    row["distinct_games"] = len(set(moves))
    row["games_played"] = [dict(moves=m, result=float(np.sign(o))) for m, o in zip(moves, records.outcome, strict=True)]
    return row


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    import dataclasses

    import jax

    from azjax.build import game_named as base_game
    from azjax.build import load_model as load_checkpoint
    from azjax.build import make_evaluator
    from azjax.checkpoint import write_json
    from azjax.compile_cache import enable_compilation_cache
    from azjax.play.selfplay_stats import selfplay_params, temperature_agent
    from azjax.play.specs import parse_agent
    from azjax.search import SearchSpec

    if not args.checkpoint:
        raise SystemExit("--checkpoint is required (the giver's network)")
    batch = args.batch or args.games
    if args.games < 2 or args.games % 2 or batch % 2 or args.games % batch:
        raise SystemExit(f"--games ({args.games}) must be even and a multiple of --batch ({batch}), itself even")
    if args.random_moves < 1:
        raise SystemExit("--random_moves must be >= 1 (the first half of a batch starts from a random first move)")
    if not jax.config.jax_compilation_cache_dir:  # keep a cache the caller (e.g. the tests) set up
        enable_compilation_cache()
    t_start = time.time()
    config, params = load_checkpoint(args.checkpoint)
    if config.game != "connect_four":
        raise SystemExit(f"{args.checkpoint} plays {config.game}, not connect_four")
    game = base_game("connect_four")
    evaluate = make_evaluator(config, game)
    player, _ = parse_agent(args.opponent, "connect_four", args.opponent_simulations)
    if player.external:
        raise SystemExit(f"--opponent {args.opponent!r} must be an azjax agent (batched games)")
    # The opponent moves at even move numbers: its first K moves are those below 2K.
    opponent = dataclasses.replace(player.agent, name=f"{player.name}+{args.random_moves}random",
                                   act=random_start_act(player.agent.act, 2 * args.random_moves))
    cells = []
    for visits in args.visits:
        spec = SearchSpec(kind="puct", num_simulations=visits, pb_c_init=config.pb_c_init, dirichlet_fraction=0.0)
        # Two programs per visit count (plain, contempt); N_scl is a traced parameter of the contempt one.
        plain = temperature_agent(game, evaluate, spec, params=params)
        contempt = temperature_agent(game, evaluate, dataclasses.replace(spec, n_scl=1), params=params)
        for n_scl in args.n_scl:
            label = n_scl or "off"
            giver = (contempt if n_scl else plain).with_params(
                selfplay_params(params, n_scl, 0.0), name=f"puct{visits}-scl{label}")
            t0 = time.time()
            row = dict(visits=visits, n_scl=label, **play_cell(game, giver, opponent, args.games, batch, args.seed))
            row["seconds"] = round(time.time() - t0, 1)
            cells.append(row)
            print(f"visits {visits:>5} n_scl {label!s:>4}: +{row['wins']} ={row['draws']} -{row['losses']} "
                  f"score {row['score']:.3f} [{row['score_low']:.3f}, {row['score_high']:.3f}] "
                  f"distinct {row['distinct_games']} len {row['mean_length']:.1f} [{row['seconds']}s]", flush=True)
            write_json(args.out, dict(partial=True, command=command, cells=cells))
    return dict(
        command=command,
        args=vars(args),
        giver=dict(checkpoint=args.checkpoint, side="second", search="puct", pb_c_init=config.pb_c_init,
                   root_noise=0.0, move="most visits"),
        opponent=dict(spec=args.opponent, name=opponent.name, random_moves=args.random_moves),
        notes=("results from the giver's (the second player's) view; score = (w + d/2) / games with its 95% Wilson "
               "interval; n_scl 'off' = plain PUCT; every cell plays from the same PRNG key and openings; "
               "distinct_games counts distinct move sequences; games_played: moves (columns 1-7, first player "
               "first) and the giver's result of every game; seconds = wall time of the cell, compilation "
               "included"),
        cells=cells,
        seconds=round(time.time() - t_start, 1),
        devices=[str(d) for d in jax.devices()],
    )


def plot(summary: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from azjax.train.plots import save_figure

    cells = summary["cells"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    settings = list(dict.fromkeys(c["n_scl"] for c in cells))
    for i, n_scl in enumerate(settings):
        rows = sorted((c for c in cells if c["n_scl"] == n_scl), key=lambda c: c["visits"])
        dodge = 1.04 ** (i - (len(settings) - 1) / 2)  # lines with equal scores stay apart on the log axis
        x = [c["visits"] * dodge for c in rows]
        label = "plain PUCT" if n_scl == "off" else f"N_scl = {n_scl}"
        (line,) = ax.plot(x, [c["score"] for c in rows], "o-", label=label)
        ax.fill_between(x, [c["score_low"] for c in rows], [c["score_high"] for c in rows], color=line.get_color(),
                        alpha=0.15)
    ax.set_xscale("log")
    visits = sorted({c["visits"] for c in cells})
    ax.set_xticks(visits, [str(v) for v in visits])
    ax.minorticks_off()
    ax.set_xlabel("giver's visits per move")
    ax.set_ylabel("giver's score (95% interval)")
    games = cells[0]["games"] if cells else 0
    ax.set_title(f"Connect Four, network second vs {summary['opponent']['name']}, {games} games a point", fontsize=10)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:

    from azjax.checkpoint import script_command

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    return report(args, lambda: run(args, script_command(__file__, argv)), plot)


if __name__ == "__main__":
    raise SystemExit(main())
