"""Odds chess: the odds giver (White, a piece down) with and without search-contempt, against a fixed opponent.

docs/methods.md section 1: in odds chess plain PUCT's results against a fixed, imperfect opponent peak
and then decline as visits grow, while search-contempt keeps rising. Here the giver searches with
the material evaluator (`azjax.play.material`) at several visit budgets, once with contempt (`--n_scl`)
and once with plain PUCT, against either

  * `--opponent search:N`: the material evaluator with N-visit PUCT, sampling its moves from its
    root visits with temperature `--opponent_tau` for its first `--opponent_temperature_moves`
    plies (an imperfect, varied opponent; greedy afterwards); or
  * `--opponent stockfish`: Stockfish over UCI (`--stockfish PATH`, `--skill`, `--movetime_ms`),
    game by game (FEN in, UCI move out).

Both run in one host-side loop over plies (`play_fixed_colours`) where each side's jitted `act`
moves every live game at once.

An odds start comes from a FEN, so White (the giver) always moves first: colours do not alternate.
Results are from the giver's view. Games cut by `--max_moves` (plies) are draws; with `--adjudicate
P` the JSON also holds a material adjudication of cut games (an edge of P pawns or more wins).

    python -m lab.contempt.odds_match --start queen_odds --budgets 100 400 1600 --games 32 --opponent search:50
    python -m lab.contempt.odds_match --start knight_odds --opponent stockfish --skill 0 --movetime_ms 10
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import shutil
import time
from typing import Any

from azjax.engines.external import UCIClient

DEFAULT_STOCKFISH = "/usr/games/stockfish"


# ---------------------------------------------------------------- the engine opponent


def engine_move(engine: UCIClient, fen: str, movetime_ms: int) -> str | None:
    """The engine's move (UCI) in `fen`, or None if it has none (mate or stalemate)."""
    move, _ = engine.bestmove(fen=fen, movetime_ms=movetime_ms)
    return None if move in ("(none)", "0000") else move


# ---------------------------------------------------------------- games with fixed colours


def play_fixed_colours(
    game: Any, white: Any, black: Any, key: Any, num_games: int, movetime_ms: int = 10
) -> dict[str, Any]:
    """`num_games` games with `white` (a jittable agent) always White; odds starts have White to move.

    `black` is another agent or a `UCIClient` (`azjax.engines.external`). A host-side loop: each agent's
    `act` is jitted on its own (one compilation per agent, reused across budgets and methods), and plays
    all live games at once; an engine plays game by game from the FEN. Finished games are stepped with a
    dummy move, which pgx ignores.

    Returns numpy arrays: outcome [N] for White (+1 / 0 / -1), length [N] (plies), terminated [N]
    (False = cut by `game.max_moves`, a draw), illegal [N], and `final` (GameState [N]).
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

    step = _jit_batch_step(game)
    act_white = _jit_act(white.act)
    act_black = None if isinstance(black, UCIClient) else _jit_act(black.act)
    init_key, key = jax.random.split(key)
    states = _jit_init(game, num_games)(init_key)
    if not (np.asarray(states.env._x.color) == 0).all():
        raise ValueError("odds games must start with White to move")
    white_id = np.asarray(states.current_player)
    rows = np.arange(num_games)
    outcome = np.zeros(num_games)
    length = np.zeros(num_games, np.int64)
    illegal = np.zeros(num_games, bool)
    for ply in range(game.max_moves):
        live = ~np.asarray(states.terminated)
        if not live.any():
            break
        key, sub = jax.random.split(key)
        if ply % 2 == 0:
            actions = np.asarray(act_white(white.params, sub, states))
        elif act_black is not None:
            actions = np.asarray(act_black(black.params, sub, states))
        else:
            actions = np.zeros(num_games, np.int32)
            for i in np.flatnonzero(live):
                s = jax.tree.map(lambda x, i=i: x[i], states)
                move = engine_move(black, game.fen(s), movetime_ms)
                if move is None:
                    raise RuntimeError(f"engine has no move in a live game: {game.fen(s)}")
                actions[i] = game.parse_action(s, move)
        illegal |= live & ~np.asarray(states.legal_action_mask)[rows, actions]
        states = step(states, jnp.asarray(actions, jnp.int32))
        outcome += np.where(live, np.asarray(states.rewards)[rows, white_id], 0.0)
        length += live
    return dict(outcome=outcome, length=length, terminated=np.asarray(states.terminated), illegal=illegal,
                final=jax.tree.map(np.asarray, states))


@functools.cache
def _jit_act(act: Any):
    import jax

    return jax.jit(act)


@functools.cache
def _jit_init(game: Any, num_games: int):
    import jax

    return jax.jit(lambda key: jax.vmap(game.init)(jax.random.split(key, num_games)))


@functools.cache
def _jit_batch_step(game: Any):
    import jax

    return jax.jit(jax.vmap(game.step))


# ---------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--start", default="queen_odds", help="queen_odds, rook_odds, knight_odds, standard or a FEN")
    p.add_argument("--budgets", nargs="+", type=int, default=[100, 400, 1600], help="the giver's visits per move")
    p.add_argument("--methods", nargs="+", default=["contempt", "puct"], choices=["contempt", "puct"])
    p.add_argument("--n_scl", type=int, default=5, help="search-contempt node limit of the giver")
    p.add_argument("--opponent", default="search:50", help="search:N (material PUCT, N visits) or stockfish")
    p.add_argument("--opponent_tau", type=float, default=1.0, help="search opponent: move temperature")
    p.add_argument("--opponent_temperature_moves", type=int, default=20,
                   help="search opponent: tau applies to the first K plies of the game (then greedy)")
    p.add_argument("--stockfish", default=DEFAULT_STOCKFISH, help="UCI engine path")
    p.add_argument("--skill", type=int, default=0, help="Stockfish 'Skill Level' (0-20)")
    p.add_argument("--movetime_ms", type=int, default=10, help="Stockfish time per move")
    p.add_argument("--games", type=int, default=16, help="games per (budget, method)")
    p.add_argument("--max_moves", type=int, default=200, help="ply cap (cut games are draws)")
    p.add_argument("--adjudicate", type=float, default=None, help="also score cut games by a material edge (pawns)")
    p.add_argument("--scale", type=float, default=None, help="material evaluator tanh scale (default 0.2)")
    p.add_argument("--capture_prior", type=float, default=0.0, help="material evaluator: prior logit per pawn captured")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/contempt/odds_match.json")
    return p


def _summary(outcome: Any, n_unfinished: int) -> dict[str, Any]:
    from azjax.play.arena import elo_from_score, wilson_interval
    from azjax.play.selfplay_stats import wdl

    wins, draws, losses = wdl(outcome)
    n = wins + draws + losses
    score = (wins + 0.5 * draws) / max(n, 1)
    low, high = wilson_interval(score, n)
    return dict(games=n, wins=wins, draws=draws, losses=losses, unfinished=n_unfinished, score=score, score_low=low,
                score_high=high, elo=elo_from_score(score))


def run(args: argparse.Namespace) -> dict[str, Any]:
    import jax

    from azjax.checkpoint import script_command, write_json
    from azjax.compile_cache import enable_compilation_cache
    from azjax.games import make_game
    from azjax.play.material import DEFAULT_SCALE, adjudicate_by_material, material_evaluator
    from azjax.play.selfplay_stats import temperature_agent
    from azjax.search import SearchSpec

    if args.games < 1:
        raise SystemExit("--games must be >= 1")
    if not jax.config.jax_compilation_cache_dir:  # keep a cache the caller (e.g. the tests) set up
        enable_compilation_cache()
    t_start = time.time()
    game = make_game("chess", start=args.start)
    game = dataclasses.replace(game, max_moves=min(args.max_moves, game.max_moves))
    scale = DEFAULT_SCALE if args.scale is None else args.scale
    evaluate = material_evaluator(scale=scale, capture_prior=args.capture_prior)

    engine = None
    if args.opponent == "stockfish":
        if not shutil.which(args.stockfish) and not os.path.exists(args.stockfish):
            raise SystemExit(f"Stockfish not found at {args.stockfish!r}")
        engine = UCIClient([args.stockfish], options={"Skill Level": args.skill, "Threads": 1, "Hash": 16})
        opponent_desc = dict(kind="stockfish", engine=engine.name, skill=args.skill, movetime_ms=args.movetime_ms)
        opponent = None
    elif args.opponent.startswith("search:") and args.opponent.split(":", 1)[1].isdigit():
        n = int(args.opponent.split(":", 1)[1])
        opp_spec = SearchSpec(kind="puct", num_simulations=n, dirichlet_fraction=0.0)
        opponent = temperature_agent(game, evaluate, opp_spec, tau=args.opponent_tau,
                                     temperature_moves=args.opponent_temperature_moves, name=args.opponent)
        opponent_desc = dict(kind="search", evaluator="material", num_simulations=n, tau=args.opponent_tau,
                             temperature_moves=args.opponent_temperature_moves)
    else:
        raise SystemExit(f"bad --opponent {args.opponent!r}: use search:N or stockfish")

    rows = []
    key = jax.random.key(args.seed)
    try:
        for budget in args.budgets:
            for method in args.methods:
                n_scl = args.n_scl if method == "contempt" else 0
                spec = SearchSpec(kind="puct", num_simulations=budget, dirichlet_fraction=0.0, n_scl=n_scl)
                giver = temperature_agent(game, evaluate, spec, tau=0.0, name=f"{method}{budget}")
                t0 = time.time()
                if engine is not None:
                    engine.new_game()
                res = play_fixed_colours(game, giver, engine or opponent, key, args.games, args.movetime_ms)
                unfinished = int((~res["terminated"]).sum())
                row = dict(budget=budget, method=method, n_scl=n_scl or None, **_summary(res["outcome"], unfinished),
                           illegal=int(res["illegal"].sum()), mean_length=float(res["length"].mean()))
                if args.adjudicate is not None:
                    judged = adjudicate_by_material(res["final"], res["length"], res["terminated"], res["outcome"],
                                                    args.adjudicate)
                    row["adjudicated"] = dict(threshold_pawns=args.adjudicate, **_summary(judged, 0))
                row["seconds"] = round(time.time() - t0, 1)
                rows.append(row)
                print(_line(row), flush=True)
                command = script_command(__file__)
                write_json(args.out, dict(partial=True, command=command, results=rows))
    finally:
        if engine is not None:
            engine.close()
    return dict(
        command=script_command(__file__),
        args=vars(args),
        start=args.start,
        start_fen=game.start_fen,
        giver=dict(colour="white", evaluator="material", scale=scale, capture_prior=args.capture_prior,
                   search="puct", tau=0.0),
        opponent=opponent_desc,
        max_moves=game.max_moves,
        notes=("results from the odds giver's (White's) view; colours never alternate; games cut by max_moves "
               "count as draws ('unfinished'); score = (w + d/2)/games with its 95% Wilson interval; every "
               "(budget, method) plays from the same PRNG key."),
        results=rows,
        seconds=round(time.time() - t_start, 1),
    )


def _line(row: dict[str, Any]) -> str:
    s = (f"{row['method']:>8} {row['budget']:>5}: +{row['wins']:<3} ={row['draws']:<3} -{row['losses']:<3} "
         f"score {row['score']:.3f} [{row['score_low']:.3f}, {row['score_high']:.3f}] "
         f"unfinished {row['unfinished']:<3} len {row['mean_length']:.0f}")
    if "adjudicated" in row:
        a = row["adjudicated"]
        s += f" | adjudicated +{a['wins']} ={a['draws']} -{a['losses']} score {a['score']:.3f}"
    return s + f" [{row['seconds']}s]"


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import write_json

    args = build_parser().parse_args(argv)
    summary = run(args)
    print()
    print(f"{'method':>8} {'visits':>6}  {'W':>3} {'D':>3} {'L':>3}  score  95% CI")
    for r in summary["results"]:
        print(f"{r['method']:>8} {r['budget']:>6}  {r['wins']:>3} {r['draws']:>3} {r['losses']:>3}  "
              f"{r['score']:.3f}  [{r['score_low']:.3f}, {r['score_high']:.3f}]")
    write_json(args.out, summary)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
