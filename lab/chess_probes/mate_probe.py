"""Does a chess model's search play a mate in one when it has one, and does it walk into one?

    python -m lab.chess_probes.mate_probe --games results/arena/chess/games.pgn --write_positions \
        results/arena/chess/mate_in_one_positions.txt                            # once: the probe's positions
    python -m lab.chess_probes.mate_probe --checkpoint results/models/chess_hour --visits 64 [--considered 64] \
        [--c_scale 1.0] --out results/chess_hour/mate_in_one.json                # a model's search on them

    python -m lab.chess_probes.mate_probe --games results/arena/chess/games.pgn --write_threats \
        results/arena/chess/mate_threat_positions.txt                           # once: positions with a blunder
    python -m lab.chess_probes.mate_probe --kind threats --positions results/arena/chess/mate_threat_positions.txt \
        --checkpoint MODEL --visits 64 [--certainty expanded] --out FILE.json    # how often it walks into a mate

The positions come from recorded games (arenas' `games.pgn` collections): every position (once each) where the side
to move can mate in one. The probe searches each with `azjax analyze` and reports the share where the chosen move
mates (`mates_played`), the share where the search visited a mating move at all (`mates_visited`), and the median
prior of the best-rated mating move. A network whose games end in fifty-move draws a queen or two ahead plays few of
them: with Gumbel's root, a move outside the `--considered` moves of highest prior is never searched, and a searched
mate still loses the final choice to a move of much higher prior when `--c_scale` is small (docs/methods.md
section 1).

`--kind threats` asks the converse on every distinct position of the games where some legal move lets the opponent
mate in one and some other does not: the share where the searched move is such a blunder (`blunders_played`). lc0's
certainty propagation with the scan (`--certainty expanded`, docs/methods.md section 14) knows each of those moves
lost once the search has visited it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import chess

from lab.chess_probes.material_probe import analyze_positions


def distinct_positions(collections: list[Path]) -> Iterator[chess.Board]:
    """Every distinct position (by FEN) of the games of the PGN collections, in their order, once each, before its
    move is played."""
    from azjax.engines.records import read_collection

    seen: set[str] = set()
    for path in collections:
        for game in read_collection(path):
            board = chess.Board(game["fen"])
            for move in game["moves"]:
                if board.fen() not in seen:
                    seen.add(board.fen())
                    yield board
                board.push_uci(move)


def moves_where(board: chess.Board, test: Callable[[chess.Board], bool]) -> list[str]:
    """The legal moves (UCI) after which `test` holds of the position."""
    found = []
    for candidate in list(board.legal_moves):
        board.push(candidate)
        if test(board):
            found.append(candidate.uci())
        board.pop()
    return found


def mate_in_one_positions(collections: list[Path]) -> list[tuple[str, list[str]]]:
    """(FEN, mating moves in UCI) for every distinct position of the games whose side to move can mate in one."""
    found = ((board.fen(), moves_where(board, chess.Board.is_checkmate)) for board in distinct_positions(collections))
    return [(fen, mates) for fen, mates in found if mates]


def mate_threat_positions(collections: list[Path]) -> list[tuple[str, list[str]]]:
    """(FEN, the moves that allow a mate in one, in UCI) for every distinct position of the games where some legal
    move allows one and some other does not."""

    def allows_mate(board: chess.Board) -> bool:
        return not board.is_game_over() and bool(moves_where(board, chess.Board.is_checkmate))

    out = []
    for board in distinct_positions(collections):
        blunders = moves_where(board, allows_mate)
        if 0 < len(blunders) < board.legal_moves.count():
            out.append((board.fen(), blunders))
    return out


def read_positions(path: Path) -> list[tuple[str, list[str]]]:
    """The lines `FEN ; move move ...` of a positions file."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            fen, _, mates = line.partition(";")
            out.append((fen.strip(), mates.split()))
    return out


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json
    from azjax.engines.records import read_collection

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="+", help="PGN game collections (an arena's games.pgn) to draw positions from")
    p.add_argument("--write_positions", help="write the positions drawn from --games here and stop")
    p.add_argument("--write_threats", help="write the positions with a move that allows a mate in one here and stop")
    p.add_argument("--kind", choices=["mates", "threats"], default="mates",
                   help="what the --positions list: mates in one (default), or moves that allow one")
    p.add_argument("--positions", default="results/arena/chess/mate_in_one_positions.txt",
                   help="lines `FEN ; mating moves`")
    p.add_argument("--checkpoint", help="the model (or run directory) whose search to probe")
    p.add_argument("--visits", type=int, default=64)
    p.add_argument("--considered", type=int, default=None, help="Gumbel's root moves (default: the model's)")
    p.add_argument("--c_scale", type=float, default=None, help="Gumbel's gumbel_c_scale (default: the model's)")
    p.add_argument("--certainty", choices=["off", "visited", "expanded"], default=None,
                   help="lc0's certainty propagation (default: the model's eval_certainty_propagation)")
    p.add_argument("--out", help="JSON of the probe")
    args = p.parse_args(argv)

    if args.write_positions or args.write_threats:
        if not args.games:
            p.error("--write_positions and --write_threats need --games")
        files = [Path(f) for f in args.games]
        try:
            games = sum(len(read_collection(f)) for f in files)
            if args.write_positions:
                out, positions, what = args.write_positions, mate_in_one_positions(files), "can mate in one, with " \
                    "the mating moves"
            else:
                out, positions, what = args.write_threats, mate_threat_positions(files), "has a move that allows a " \
                    "mate in one and one that does not, with the moves that allow one"
        except (OSError, ValueError) as e:  # a missing or corrupt collection
            p.error(str(e))
        header = (f"# positions whose side to move {what}: "
                  f"{script_command(__file__, argv)}\n# from {games} games of {' '.join(args.games)}\n")
        Path(out).write_text(header + "".join(f"{fen} ; {' '.join(m)}\n" for fen, m in positions))
        print(f"{len(positions)} positions -> {out}")
        return 0
    if not (args.checkpoint and args.out):
        p.error("give --checkpoint and --out (or --games and --write_positions)")

    positions = read_positions(Path(args.positions))
    given = (("considered", args.considered), ("c_scale", args.c_scale), ("certainty", args.certainty))
    flags = tuple(f"--{k}={v}" for k, v in given if v is not None)
    rows = analyze_positions(args.checkpoint, [fen for fen, _ in positions], args.visits, flags)
    if args.kind == "threats":
        blunders = [r["move"] in moves for r, (_, moves) in zip(rows, positions, strict=True)]
        result = {
            "command": script_command(__file__, argv), "checkpoint": args.checkpoint, "visits": args.visits,
            "considered": args.considered, "c_scale": args.c_scale, "certainty": args.certainty,
            "positions_file": args.positions, "positions": len(positions),
            "blunders_played": sum(blunders) / len(blunders),
            "blunders": [{"fen": fen, "move": r["move"]}
                         for r, (fen, _), b in zip(rows, positions, blunders, strict=True) if b],
            "note": "blunders_played: the share of positions where the searched move lets the opponent mate in one",
        }
        write_json(args.out, result)
        print(f"{args.checkpoint} ({' '.join(flags) or 'its own search'}): walked into a mate in one in "
              f"{result['blunders_played']:.0%} of {len(positions)} positions -> {args.out}")
        return 0
    played = [r["move"] in mates for r, (_, mates) in zip(rows, positions, strict=True)]
    visited = [any(r["visits"].get(m, 0) > 0 for m in mates) for r, (_, mates) in zip(rows, positions, strict=True)]
    # The prior of a mating move the search never visited is not in analyze's output: read as 0.
    priors = [max(r["prior"].get(m, 0.0) for m in mates) for r, (_, mates) in zip(rows, positions, strict=True)]
    result = {
        "command": script_command(__file__, argv), "checkpoint": args.checkpoint, "visits": args.visits,
        "considered": args.considered, "c_scale": args.c_scale, "certainty": args.certainty,
        "positions_file": args.positions,
        "positions": len(positions),
        "mates_played": sum(played) / len(played), "mates_visited": sum(visited) / len(visited),
        "played_when_visited": sum(played) / max(1, sum(visited)),
        "median_mate_prior_visited": statistics.median([q for q, v in zip(priors, visited, strict=True) if v] or [0]),
        "note": "mates_played: the share of positions where the searched move mates; mates_visited: where a mating "
                "move got a visit",
    }
    write_json(args.out, result)
    print(f"{args.checkpoint} ({' '.join(flags) or 'its own search'}): mate played in {result['mates_played']:.0%} "
          f"of {len(positions)} positions, visited in {result['mates_visited']:.0%} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
