"""How a 9x9 model's games against an outside engine turned: the model's own search replayed over every position it
had to move in, from an arena's SGF collection (issue 64: "why the long games are lost").

    python -m lab.go_9x9.losses --games results/arena/go_9x9/games.sgf --match gnugo-l10 \
        --checkpoint results/models/go_9x9_sai --sensible_lambda 0.5 --visits 128 --out results/go_9x9/losses.json

For each game the model played (its name in the id matches `--model_name`, its colour read from the SGF's player
names), at every position where it was to move: its search's winrate for itself ((1 + root value) / 2), its score
head's predicted lead (points, its view, komi included) and whether it passed there. From these:
  * lost_from: the model's first move from which its winrate stayed below `--lost_below` to the end (None if it
    never did): the game had turned by then;
  * first_pass: the ply of the model's first pass, with its winrate and predicted lead there;
  * biggest_drop: the largest fall of its winrate between two of its moves, and the opponent's move between them;
  * final_stones: the model's stones on the board at the end; captures: each opponent move that took model stones,
    and how many; captured_by_drop_move: how many the opponent's move before the biggest drop took.
Each game gets a verdict: "passed ahead" (its first pass came with winrate >= 0.5 and the game turned only after
it), "turned in play" (the game turned before the model passed, or it never passed), or "won".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.build import board_game, load_model, make_network
from azjax.checkpoint import script_command
from azjax.engines.engine import Engine
from azjax.engines.position import Position
from azjax.engines.records import read_collection
from azjax.network import with_auxiliary


def model_colour(game: dict[str, Any], model_name: str) -> str | None:
    """"b" or "w": the colour whose SGF player name contains `model_name`; None if neither or both do."""
    black, white = model_name in game["black"], model_name in game["white"]
    if black == white:
        return None
    return "b" if black else "w"


def model_won(result: str, colour: str) -> bool:
    """Whether an SGF result ("B+3.5", "W+R") is a win for `colour`."""
    return result[:2].lower() == f"{colour}+"


def lost_from(winrates: list[float], below: float) -> int | None:
    """The first index from which every winrate is below `below`; None if the last one is not."""
    start = None
    for i, w in enumerate(winrates):
        if w < below:
            start = i if start is None else start
        else:
            start = None
    return start


def analyse_game(engine: Engine, score: Any, game: dict[str, Any], colour: str, visits: int,
                 lost_below: float) -> dict[str, Any]:
    """The model's view of one game (see the module's docstring)."""
    position = Position(engine.game)
    position.reset(komi=float(game["komi"]))
    to_move: list[int] = []  # plies (from 0) where the model was to move
    own = 1 if colour == "b" else -1  # the model's stones on `game.board`
    captures: list[dict[str, Any]] = []  # the opponent's moves that took model stones
    for ply, move in enumerate(game["moves"]):
        if (ply % 2 == 0) == (colour == "b"):
            to_move.append(ply)
        before = int((np.asarray(engine.game.board(position.state)) == own).sum())
        position.play(move)
        taken = before - int((np.asarray(engine.game.board(position.state)) == own).sum())
        if taken > 0:
            captures.append({"ply": ply + 1, "move": move, "stones": taken})
    states = [position.states[ply] for ply in to_move]
    results = engine.search_batch(states, visits=visits, batch_size=32)
    winrates = [round((1.0 + r.root_value) / 2.0, 4) for r in results]
    observations = jnp.stack([s.observation for s in states])
    leads = [round(float(x), 2) for x in np.asarray(score(engine.params, observations))]
    passes = [i for i, ply in enumerate(to_move) if game["moves"][ply] == "pass"]
    turned = lost_from(winrates, lost_below)
    drops = [(winrates[i - 1] - winrates[i], i) for i in range(1, len(winrates))]
    drop, at = max(drops) if drops else (0.0, 0)
    board = np.asarray(engine.game.board(position.state)).reshape(-1)
    won = model_won(game["result"], colour)
    first_pass = passes[0] if passes else None
    if won:
        verdict = "won"
    elif first_pass is not None and winrates[first_pass] >= 0.5 and (turned is None or turned > first_pass):
        verdict = "passed ahead"
    else:
        verdict = "turned in play"
    return {
        "id": game["id"], "colour": colour, "result": game["result"], "plies": len(game["moves"]), "verdict": verdict,
        "lost_from_ply": to_move[turned] + 1 if turned is not None else None,
        "first_pass_ply": to_move[first_pass] + 1 if first_pass is not None else None,
        "winrate_at_first_pass": winrates[first_pass] if first_pass is not None else None,
        "lead_at_first_pass": leads[first_pass] if first_pass is not None else None,
        "model_passes": len(passes),
        "model_passes_while_ahead": sum(winrates[i] >= 0.5 for i in passes),
        "biggest_drop": {"from": winrates[at - 1] if drops else None, "to": winrates[at] if drops else None,
                         "after_opponent_move_ply": to_move[at], "opponent_move": game["moves"][to_move[at] - 1]
                         if drops and to_move[at] > 0 else None, "size": round(drop, 4)},
        "final_stones": int((board == own).sum()),
        "captured_by_drop_move": next((c["stones"] for c in captures if drops and c["ply"] == to_move[at]), 0),
        "captures": captures,
        "winrates": winrates, "leads": leads,
        "moves_ply": [ply + 1 for ply in to_move],
    }


def summary(games: list[dict[str, Any]]) -> dict[str, Any]:
    losses = [g for g in games if g["verdict"] != "won"]
    wins = [g for g in games if g["verdict"] == "won"]
    verdicts: dict[str, int] = {}
    for g in losses:
        verdicts[g["verdict"]] = verdicts.get(g["verdict"], 0) + 1
    return {
        "games": len(games), "wins": len(wins), "losses": len(losses), "loss_verdicts": verdicts,
        "mean_plies": {"wins": float(np.mean([g["plies"] for g in wins])) if wins else None,
                       "losses": float(np.mean([g["plies"] for g in losses])) if losses else None},
        "losses_with_no_model_stone_left": sum(g["final_stones"] == 0 for g in losses),
        # the games turned by a capture: the opponent's move before the model's biggest fall took its stones
        "losses_whose_biggest_drop_came_with_a_capture": sum(g["captured_by_drop_move"] > 0 for g in losses),
        "stones_captured_at_the_biggest_drop": sorted(g["captured_by_drop_move"] for g in losses),
        "mean_model_passes": {"wins": float(np.mean([g["model_passes"] for g in wins])) if wins else None,
                              "losses": float(np.mean([g["model_passes"] for g in losses])) if losses else None},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", required=True, help="an arena's SGF collection (games.sgf)")
    p.add_argument("--match", default="", help="only games whose id contains this (e.g. gnugo-l10)")
    p.add_argument("--model_name", default="go_9x9_sai", help="the model's name as the SGF's player names give it")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--visits", type=int, default=128)
    p.add_argument("--sensible_lambda", type=float, default=None,
                   help="SAI networks: the sensible agent's lambda (default: the model's player setting)")
    p.add_argument("--lost_below", type=float, default=0.3)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    games = [g for g in read_collection(args.games) if args.match in g["id"]]
    chosen = [(g, c) for g in games if (c := model_colour(g, args.model_name)) is not None]
    if not chosen:
        print(f"losses.py: no game of {args.games} matching {args.match!r} names {args.model_name!r}", file=sys.stderr)
        return 2
    overrides = {} if args.sensible_lambda is None else {"eval_sensible_lambda": args.sensible_lambda}
    engine = Engine.from_checkpoint(args.checkpoint, visits=args.visits, config_overrides=overrides, tree_reuse=False)
    config, params = load_model(args.checkpoint)
    if config.score_loss_weight <= 0:
        raise SystemExit(f"losses.py: {args.checkpoint} has no score head (score_loss_weight 0)")
    network = with_auxiliary("score")(make_network(config, board_game(config)).apply)
    score = jax.jit(lambda prm, obs: network(prm, obs)[1])
    analysed = []
    for k, (g, c) in enumerate(chosen):
        analysed.append(analyse_game(engine, score, g, c, args.visits, args.lost_below))
        a = analysed[-1]
        print(f"{k + 1}/{len(chosen)} {a['id']} {a['colour']} {a['result']} {a['plies']} plies: {a['verdict']}, "
              f"lost from ply {a['lost_from_ply']}, first pass at ply {a['first_pass_ply']} "
              f"(winrate {a['winrate_at_first_pass']})", flush=True)
    out = {"command": script_command(__file__, argv),
           "summary": summary(analysed), "games": analysed}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
