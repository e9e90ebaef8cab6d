"""Does a chess network value material in the middle of a game, not only a queen missing from the start position?

    python -m lab.chess_probes.material_probe --games results/arena/chess/games.pgn --write_positions \
        results/arena/chess/material_midgame_positions.txt                       # once: the probe's positions
    python -m lab.chess_probes.material_probe --checkpoint results/models/chess_hour --visits 64 \
        --out results/chess_hour/adjudicate_scale/material_midgame.json          # a model's values on them

The positions come from recorded games (an arena's `games.pgn` collection): in each game, the first position between
plies `--min_ply` and `--max_ply` where both sides still have their queen and equal material and the side to move is
not in check. Each gives a pair: the same position without the opponent's queen (the mover a queen up) and without
the mover's own queen (a queen down), kept when both are legal. The probe's figure is the mean, over pairs, of the
searched value a queen up minus the value a queen down, both for the player to move (`azjax analyze`'s "value"); 2
is a network certain of the result, 0 one blind to a queen. The issue's start-position probe
(results/arena/chess/material_positions.txt) asks for 0.3.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

VALUES = {"p": 1, "n": 3, "b": 3, "r": 5, "q": 9}


def _material(board, colour: bool) -> int:
    return sum(VALUES.get(p.symbol().lower(), 0) for p in board.piece_map().values() if p.color == colour)


def pairs_from_games(games: list[dict], min_ply: int, max_ply: int) -> list[tuple[str, str]]:
    """(queen up, queen down) FENs, at most one pair a game (a game of `azjax.engines.records.read_collection`), in
    the games' order."""
    import chess

    out = []
    for game in games:
        board = chess.Board(game["fen"])
        for ply, move in enumerate(game["moves"]):
            if ply >= min_ply:
                queens = [board.pieces(chess.QUEEN, c) for c in (chess.WHITE, chess.BLACK)]
                even = _material(board, chess.WHITE) == _material(board, chess.BLACK)
                if all(len(q) == 1 for q in queens) and even and not board.is_check():
                    up, down = board.copy(), board.copy()
                    up.remove_piece_at(next(iter(board.pieces(chess.QUEEN, not board.turn))))
                    down.remove_piece_at(next(iter(board.pieces(chess.QUEEN, board.turn))))
                    if up.is_valid() and down.is_valid() and up.legal_moves.count() and down.legal_moves.count():
                        out.append((up.fen(), down.fen()))
                        break
            if ply >= max_ply:
                break
            board.push_uci(move)
    return out


def read_pairs(path: Path) -> list[tuple[str, str]]:
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    if len(lines) % 2:
        raise SystemExit(f"{path}: an odd number of positions ({len(lines)}); the file holds (up, down) pairs")
    return list(zip(lines[::2], lines[1::2], strict=True))


def analyze_positions(checkpoint: str, fens: list[str], visits: int, flags: tuple[str, ...] = ()) -> list[dict]:
    """`azjax analyze` of each FEN (its search's move, value, visits and priors), one row a position, in order.

    `flags` are further analyze flags (`--considered=64`). Exits naming the first position that cannot be set up.
    """
    from azjax.cli import main as azjax

    with tempfile.TemporaryDirectory() as tmp:
        lines, found = Path(tmp) / "positions.txt", Path(tmp) / "search.jsonl"
        lines.write_text("".join(f"{fen}\n" for fen in fens))
        status = azjax(["analyze", "--checkpoint", checkpoint, "--visits", str(visits), *flags,
                        "--positions", str(lines), "--out", str(found)])
        if status:
            raise SystemExit(status)
        rows = [json.loads(line) for line in found.read_text().splitlines()]
    if any("error" in r for r in rows):
        raise SystemExit(f"a position could not be set up: {next(r for r in rows if 'error' in r)}")
    return rows


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json
    from azjax.engines.records import read_collection

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", help="a PGN game collection (an arena's games.pgn) to draw positions from")
    p.add_argument("--min_ply", type=int, default=16)
    p.add_argument("--max_ply", type=int, default=40)
    p.add_argument("--write_positions", help="write the pairs drawn from --games here and stop")
    p.add_argument("--positions", default="results/arena/chess/material_midgame_positions.txt",
                   help="the (queen up, queen down) pairs, two lines each")
    p.add_argument("--checkpoint", help="the model (or run directory) whose values to read")
    p.add_argument("--visits", type=int, default=64)
    p.add_argument("--out", help="JSON of the model's values")
    args = p.parse_args(argv)

    if args.write_positions:
        if not args.games:
            p.error("--write_positions needs --games")
        try:
            games = read_collection(args.games)
        except (OSError, ValueError) as e:  # a missing or corrupt collection
            p.error(str(e))
        pairs = pairs_from_games(games, args.min_ply, args.max_ply)
        header = (f"# (queen up, queen down) pairs, the mover's view: {script_command(__file__, argv)}\n"
                  f"# from {len(games)} games of {args.games}: first position between plies {args.min_ply} and "
                  f"{args.max_ply} with both queens on, equal material and no check\n")
        Path(args.write_positions).write_text(header + "".join(f"{u}\n{d}\n" for u, d in pairs))
        print(f"{len(pairs)} pairs -> {args.write_positions}")
        return 0
    if not (args.checkpoint and args.out):
        p.error("give --checkpoint and --out (or --games and --write_positions)")

    pairs = read_pairs(Path(args.positions))
    rows = analyze_positions(args.checkpoint, [fen for pair in pairs for fen in pair], args.visits)
    spreads = [up["value"] - down["value"] for up, down in zip(rows[::2], rows[1::2], strict=True)]
    net = [up["net_value"] - down["net_value"] for up, down in zip(rows[::2], rows[1::2], strict=True)]
    result = {
        "command": script_command(__file__, argv), "checkpoint": args.checkpoint, "visits": args.visits,
        "positions": args.positions, "pairs": len(pairs),
        "mean_spread": statistics.fmean(spreads),
        "stdev_spread": statistics.stdev(spreads) if len(spreads) > 1 else 0.0,
        "share_at_least_0.3": sum(s >= 0.3 for s in spreads) / len(spreads),
        "mean_net_spread": statistics.fmean(net),
        "spreads": spreads,
        "note": "spread: the searched value of the player to move a queen up minus a queen down, per pair",
    }
    write_json(args.out, result)
    print(f"{args.checkpoint}: mean spread {result['mean_spread']:.3f} over {len(pairs)} pairs "
          f"(network alone {result['mean_net_spread']:.3f}); {result['share_at_least_0.3']:.0%} at 0.3 or more "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
