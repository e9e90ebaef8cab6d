"""How an arena's chess games ended: per pairing, the count of each ending (checkmate, stalemate, threefold
repetition, fifty moves, insufficient material, the arena's ply cap) by the first agent's result, and its material
lead on the final board (pawn 1, knight and bishop 3, rook 5, queen 9). A model that wins material but draws by
repetition far ahead has learnt material but not to convert it.

    python -m lab.chess_probes.chess_endings results/chess_hour/wdl_random_openings/arena \\
        --out results/chess_hour/wdl_random_openings/arena/endings.json

Reads the games `azjax arena` saves in `ARENA/games.pgn` (each named `NN_A_vs_B_GGGG`, the pairing index first) and
the pairing names from `ARENA/results.json`.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path
from typing import Any

import chess

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def material_lead(board: chess.Board, colour: chess.Color) -> int:
    """`colour`'s material minus the other side's, in pawns."""
    return sum(PIECE_VALUES.get(p.piece_type, 0) * (1 if p.color == colour else -1) for p in board.piece_map().values())


def ending(game: dict[str, Any], first_agent: str) -> dict[str, Any]:
    """One game's ending (a game of `read_collection`): how it ended, its result for the first agent (win, draw, loss)
    and that agent's material lead at the end."""
    board = chess.Board(game["fen"])
    for move in game["moves"]:
        board.push_uci(move)
    outcome = board.outcome(claim_draw=True)
    colour = chess.WHITE if game["white"] == first_agent else chess.BLACK
    result = game["result"]
    white_score = {"1-0": "win", "0-1": "loss", "1/2-1/2": "draw"}.get(result, "unfinished")
    score = white_score if colour == chess.WHITE else {"win": "loss", "loss": "win"}.get(white_score, white_score)
    return dict(termination=outcome.termination.name.lower() if outcome else "ply_cap",
                result=score, first_agent_white=colour == chess.WHITE,
                first_agent_material_lead=material_lead(board, colour), plies=board.ply())


def summarise(arena: Path) -> list[dict[str, Any]]:
    import json

    from azjax.engines.records import ARENA_GAME_ID, read_collection

    results = json.loads((arena / "results.json").read_text())
    try:
        collection = read_collection(arena / "games.pgn")
    except (OSError, ValueError) as e:
        raise SystemExit(str(e)) from None
    by_pairing = collections.defaultdict(list)
    for game in collection:
        name = ARENA_GAME_ID.fullmatch(game["id"])
        by_pairing[int(name.group(1)) if name else -1].append(game)
    rows = []
    for index, pairing in enumerate(results["pairings"]):
        games = [ending(g, pairing["name_a"]) for g in by_pairing[index]]
        if not games:
            raise SystemExit(f"{arena}/games.pgn holds no game of pairing {index} ({pairing['name_a']} vs "
                             f"{pairing['name_b']})")
        leads = [g["first_agent_material_lead"] for g in games]
        endings = collections.Counter(f"{g['termination']} {g['result']}" for g in games)
        rows.append(dict(name_a=pairing["name_a"], name_b=pairing["name_b"], games=len(games),
                         endings=dict(endings.most_common()),
                         material_lead_of_a_at_the_end=dict(median=statistics.median(leads), min=min(leads),
                                                            max=max(leads)),
                         draws_with_a_ahead_by_9_or_more=sum(1 for g in games if g["result"] == "draw"
                                                             and g["first_agent_material_lead"] >= 9)))
    return rows


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("arena", help="an `azjax arena --out_dir` of chess games")
    p.add_argument("--out", default=None, help="JSON (default ARENA/endings.json)")
    args = p.parse_args(argv)
    arena = Path(args.arena)
    if not (arena / "results.json").exists():
        raise SystemExit(f"{arena} has no results.json: not an arena directory")
    rows = summarise(arena)
    out = args.out or str(arena / "endings.json")
    write_json(out, dict(command=script_command(__file__, argv), arena=str(arena), pairings=rows))
    for r in rows:
        print(f"{r['name_a']} vs {r['name_b']}: {r['endings']}; {r['name_a']}'s material lead at the end: "
              f"median {r['material_lead_of_a_at_the_end']['median']}; draws {r['draws_with_a_ahead_by_9_or_more']} "
              f"of {r['games']} with it 9 or more ahead")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
