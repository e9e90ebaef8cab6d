"""Does a chess model see one-move tactics? For each model: the policy's prior on the move that takes a free piece or
mates in one, in each position of a file, where that move ranks among the legal moves by prior, and whether the
search plays it; and, from arena games against random play, how often the model had a mate in one and played it.

    python -m lab.chess_probes.chess_tactics results/chess_hour/wdl_random_openings/model results/models/chess_quick \\
        --games results/chess_hour/wdl_random_openings/arena --out results/chess_hour/chess_tactics.json

The solving moves are python-chess's: the mates in one where there are any, else the captures of the most
valuable piece (`results/arena/chess/tactics_positions.txt`: one FEN a line, `#` lines are comments; the comment
above a FEN names it). `--games ARENA` (one per model, in order; `-` for none) reads the games of `azjax arena`'s
pairing against `random` (`ARENA/results.json`, the games `NN_A_vs_random_GGGG` of `ARENA/games.pgn`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import chess

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
POSITIONS = "results/arena/chess/tactics_positions.txt"


def read_positions(path: str) -> list[tuple[str, str]]:
    """(name, FEN) of each position: the name is the comment line just above the FEN (else the FEN)."""
    out, name = [], None
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line.startswith("#"):
            name = line[1:].strip()
        elif line:
            out.append((name or line, line))
            name = None
    return out


def mates_in_one(board: chess.Board) -> list[str]:
    mates = []
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            mates.append(move.uci())
        board.pop()
    return mates


def solving_moves(board: chess.Board) -> list[str]:
    """The mates in one, else the captures of the most valuable piece (empty: neither)."""
    mates = mates_in_one(board)
    if mates:
        return mates
    captures = [(PIECE_VALUES.get(board.piece_type_at(m.to_square) or chess.PAWN, 1), m.uci())
                for m in board.legal_moves if board.is_capture(m)]
    best = max((v for v, _ in captures), default=0)
    return [m for v, m in captures if v == best]


def probe(engine: Any, positions: list[tuple[str, str]]) -> dict[str, Any]:
    """The policy's and the search's answer to each position, and their means."""
    rows = []
    for name, fen in positions:
        engine.position.set_position([], fen=fen)
        result = engine.search()
        prior = {s.move: s.p for s in result.stats}
        solving = solving_moves(chess.Board(fen))
        ranked = sorted(prior, key=lambda m: -prior[m])
        rows.append(dict(name=name, fen=fen, solving=solving, solving_prior=sum(prior[m] for m in solving),
                         solving_rank=1 + min(ranked.index(m) for m in solving), top_move=ranked[0],
                         top_prior=prior[ranked[0]], legal_moves=len(prior),
                         policy_entropy=-sum(p * math.log(p) for p in prior.values() if p > 0),
                         searched_move=result.best_move, search_solves=result.best_move in solving))
    n = len(rows)
    return dict(positions=rows, mean_solving_prior=sum(r["solving_prior"] for r in rows) / n,
                mean_uniform_prior=sum(len(r["solving"]) / r["legal_moves"] for r in rows) / n,
                policy_ranks_solving_first=sum(r["solving_rank"] == 1 for r in rows),
                search_solves=sum(r["search_solves"] for r in rows), count=n)


def mates_missed(arena: Path) -> dict[str, int]:
    """Over the model's games against random play in `arena/games.pgn` (the model: the other player of the pairing
    with `random` in `arena/results.json`): its moves with a mate in one on the board, and how many of those
    mated."""
    from azjax.engines.records import ARENA_GAME_ID, read_collection

    pairings = json.loads((arena / "results.json").read_text())["pairings"]
    model = next(p["name_a"] for p in pairings if p["name_b"] == "random")
    available = played = games = 0
    for game in read_collection(arena / "games.pgn"):
        name = ARENA_GAME_ID.fullmatch(game["id"])
        if not name or name.group(3) != "random" or model not in (game["white"], game["black"]):
            continue
        games += 1
        model_white = game["white"] == model
        board = chess.Board(game["fen"])
        for move in game["moves"]:
            if board.turn == (chess.WHITE if model_white else chess.BLACK):
                mates = mates_in_one(board)
                if mates:
                    available += 1
                    played += move in mates
            board.push_uci(move)
    return dict(games=games, moves_with_a_mate_in_one=available, mates_in_one_played=played)


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json
    from azjax.engines.engine import Engine

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="chess run directories or exported models")
    p.add_argument("--positions", default=POSITIONS)
    p.add_argument("--visits", type=int, default=64, help="the search's simulations")
    p.add_argument("--games", nargs="*", default=[], help="an arena directory per model (`-`: none)")
    p.add_argument("--out", default="results/chess_hour/chess_tactics.json")
    args = p.parse_args(argv)
    if args.games and len(args.games) != len(args.models):
        p.error(f"--games needs one arena directory per model ({len(args.models)}), got {len(args.games)}")
    positions = read_positions(args.positions)
    models = []
    for k, model in enumerate(args.models):
        try:
            engine = Engine.from_checkpoint(model, visits=args.visits)
        except (ValueError, OSError) as e:  # CheckpointError too: a missing, corrupt or mismatched model
            p.error(str(e))
        if not engine.game.has_fen:
            p.error(f"{model} plays {engine.game.name}, not chess")
        entry = dict(model=model, policy_head=engine.config.policy_head, value_head=engine.config.value_head,
                     **probe(engine, positions))
        if args.games and args.games[k] != "-":
            entry["arena"] = args.games[k]
            try:
                entry["against_random"] = mates_missed(Path(args.games[k]))
            except (OSError, ValueError) as e:  # no games.pgn, or a corrupt one
                p.error(str(e))
        models.append(entry)
        print(f"{model}: mean prior on the solving move {entry['mean_solving_prior']:.3f} (uniform "
              f"{entry['mean_uniform_prior']:.3f}), ranked first by the policy in {entry['policy_ranks_solving_first']}"
              f"/{entry['count']}, played by the search in {entry['search_solves']}/{entry['count']}"
              + (f"; mates in one played against random play {entry['against_random']['mates_in_one_played']}/"
                 f"{entry['against_random']['moves_with_a_mate_in_one']}" if "against_random" in entry else ""))
    write_json(args.out, dict(command=script_command(__file__, argv), visits=args.visits, positions=args.positions,
                              models=models, date=time.strftime("%Y-%m-%d %H:%M:%S")))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
