"""Packs the game records that `azjax arena` wrote one file a game (`ARENA/games/NN_A_vs_B_GGGG.{sgf,pgn,txt}`, before
arenas wrote collections) into the arena's one collection (`ARENA/games.sgf`, `games.pgn` or `games.txt`), then
deletes the single files and the emptied `games/` folder.

    python -m scripts.pack_games results            # every games/ folder under results/
    python -m scripts.pack_games runs/arena --dry_run

Each game keeps its record as it was, with its file name (less the suffix) added as its id (SGF's `GN`, PGN's
`GameId` tag, the text's `Id:` line, as `azjax.engines.records.game_record` writes them); the games go in the order of
their file names, the order in which the arena played them. Before anything is deleted the collection is read back
(`azjax.engines.records.read_collection`) and checked game by game against the files: the same ids in the same order,
the same moves, players and result, and the same record once the id is taken out. Deterministic: packing the same
files gives the same bytes.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from pathlib import Path
from typing import Any

from azjax.engines.records import (
    ARENA_GAME_ID,
    COLLECTION_SUFFIXES,
    TEXT_RECORD_START,
    read_chess_pgn,
    read_collection,
    read_connect_four_record,
    read_go_sgf,
    write_collection,
)

FORMATS = {suffix: name for name, suffix in COLLECTION_SUFFIXES.items()}  # ".sgf" -> "sgf"
READERS = {"sgf": read_go_sgf, "pgn": read_chess_pgn, "text": read_connect_four_record}


def record_files(games_dir: Path) -> list[Path]:
    """The files of `games_dir` named as arenas named their records, sorted by name; exits on a folder that mixes
    formats or holds anything else (it would not be emptied)."""
    files = sorted(games_dir.iterdir())
    others = [f.name for f in files if not (f.suffix in FORMATS and ARENA_GAME_ID.fullmatch(f.stem))]
    if others:
        raise SystemExit(f"{games_dir}: files that are not arena game records: {others[:5]}")
    if len({f.suffix for f in files}) > 1:
        raise SystemExit(f"{games_dir}: records of more than one format")
    return files


def with_id(path: Path, game_id: str) -> str | bytes:
    """The record of file `path` with `game_id` added where `game_record` puts it."""
    fmt = FORMATS[path.suffix]
    if fmt == "sgf":
        from sgfmill import sgf

        game = sgf.Sgf_game.from_bytes(path.read_bytes())
        game.get_root().set("GN", game_id)
        return game.serialise()
    if fmt == "pgn":
        import chess.pgn

        game = chess.pgn.read_game(io.StringIO(path.read_text()))
        assert game is not None
        game.headers["GameId"] = game_id
        return str(game) + "\n"
    lines = path.read_text().splitlines(keepends=True)
    if lines[0] != TEXT_RECORD_START + "\n" or not lines[1].startswith("Game: "):
        raise SystemExit(f"{path}: not a text game record")
    return "".join([*lines[:2], f"Id: {game_id}\n", *lines[2:]])


def without_id(record: str | bytes, fmt: str) -> str | bytes:
    """A collection's record with its id taken out again: the single file's record, if packing kept it."""
    if fmt == "sgf":
        from sgfmill import sgf

        game = sgf.Sgf_game.from_bytes(record)
        game.get_root().unset("GN")
        return game.serialise()
    if fmt == "pgn":
        return re.sub(r'^\[GameId "[^"]*"\]\n', "", str(record), count=1, flags=re.MULTILINE)
    return re.sub(r"^Id: .*\n", "", str(record), count=1, flags=re.MULTILINE)


def faithful(path: Path, fmt: str) -> bool:
    """Whether the format's library writes the file back byte for byte (so that `with_id` changes nothing else)."""
    if fmt == "text":
        return True
    if fmt == "sgf":
        from sgfmill import sgf

        return sgf.Sgf_game.from_bytes(path.read_bytes()).serialise() == path.read_bytes()
    import chess.pgn

    return str(chess.pgn.read_game(io.StringIO(path.read_text()))) + "\n" == path.read_text()


def check(collection: Path, files: list[Path]) -> dict[str, Any]:
    """Reads `collection` back and compares it with the single files game by game; exits on the first difference.
    Returns the counts checked."""
    fmt = FORMATS[files[0].suffix]
    packed = read_collection(collection)
    if [g["id"] for g in packed] != [f.stem for f in files]:
        raise SystemExit(f"{collection}: its ids are not the files' names in order")
    moves = 0
    for game, path in zip(packed, files, strict=True):
        data = path.read_bytes() if fmt == "sgf" else path.read_text()
        single = READERS[fmt](data)
        fields = {k: v for k, v in game.items() if k not in ("id", "record")}
        if fields != {k: v for k, v in single.items() if k != "id"}:
            raise SystemExit(f"{collection}: game {game['id']} reads otherwise than {path}")
        if without_id(game["record"], fmt) != data:
            raise SystemExit(f"{collection}: game {game['id']}'s record is not {path}'s with its id")
        moves += len(game["moves"])
    return dict(games=len(packed), moves=moves)


def pack(games_dir: Path, dry_run: bool) -> dict[str, Any]:
    files = record_files(games_dir)
    if not files:
        raise SystemExit(f"{games_dir}: no game records")
    fmt = FORMATS[files[0].suffix]
    collection = games_dir.parent / f"games{files[0].suffix}"
    if collection.exists():
        raise SystemExit(f"{collection} exists already")
    unfaithful = [f.name for f in files if not faithful(f, fmt)]
    if unfaithful:
        raise SystemExit(f"{games_dir}: {fmt} records the library writes otherwise: {unfaithful[:5]}")
    write_collection(collection, [with_id(f, f.stem) for f in files])
    counts = check(collection, files)
    if dry_run:
        collection.unlink()
    else:
        for f in files:
            f.unlink()
        games_dir.rmdir()
    return dict(collection=str(collection), **counts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("roots", nargs="+", help="folders to search for arenas' games/ folders")
    p.add_argument("--dry_run", action="store_true", help="pack and check, then delete the collections, not the files")
    args = p.parse_args(argv)
    folders = sorted({d for root in args.roots for d in Path(root).rglob("games") if d.is_dir()})
    games = moves = 0
    for folder in folders:
        row = pack(folder, args.dry_run)
        games, moves = games + row["games"], moves + row["moves"]
        print(f"{row['collection']}: {row['games']} games, {row['moves']} moves, each the same as its file")
    print(f"{len(folders)} collections, {games} games, {moves} moves" + (" (dry run: nothing changed)"
                                                                          if args.dry_run else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
