"""Game records: SGF for Go (sgfmill), PGN for chess (python-chess), a small text format for
Connect Four, and collections: many games of one format in one file. Moves are in the game's notation
(`azjax.games`: Go vertices / `pass`, UCI moves, Connect Four columns 1-7).

    data = go_sgf(["D4", "E5", "pass", "pass"], size=9, komi=7.5, black="a", white="b", result="W+7.5")
    text = chess_pgn(["e2e4", "e7e5"], white="a", black="b", result="*")
    text = connect_four_record(["4", "4", "3"], first="a", second="b", result="*")
    record = game_record(make_game("go_9x9"), moves, first="a", second="b", result="B+2.5", komi=7.5,
                         game_id=arena_game_id(0, "a", "b", 1))            # the game's format, named 00_a_vs_b_0001
    write_collection(collection_path(out_dir, game), [record, ...])       # OUT/games.sgf, games.pgn or games.txt
    for g in read_collection(out_dir / "games.sgf"):                      # each game's fields, id and own record
        print(g["id"], g["moves"])

The game says which format it is written in (`Game.record_format`). Results are written in each format's
convention: SGF `B+3.5`, `W+R` (resignation), `B+F`
(forfeit: an illegal move), `0` (draw), `Void` (unfinished); PGN and the Connect Four record
`1-0`, `0-1`, `1/2-1/2`, `*` (unfinished).
"""

from __future__ import annotations

import datetime
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.games import GO_COLUMNS, STANDARD_FEN, Game

# ---------------------------------------------------------------- Go: SGF


def vertex_to_point(vertex: str, size: int) -> tuple[int, int] | None:
    """GTP vertex -> sgfmill (row, col), row 0 at the bottom; None for a pass."""
    v = vertex.strip().upper()
    if v == "PASS":
        return None
    col, row = GO_COLUMNS.index(v[0]), int(v[1:]) - 1
    if not (0 <= col < size and 0 <= row < size):
        raise ValueError(f"vertex {vertex!r} is off a {size}x{size} board")
    return row, col


def point_to_vertex(point: tuple[int, int] | None) -> str:
    if point is None:
        return "pass"
    row, col = point
    return f"{GO_COLUMNS[col]}{row + 1}"


def go_sgf(moves: Sequence[str], *, size: int, komi: float, black: str = "", white: str = "", result: str = "",
           first: str = "b", event: str = "", date: str | None = None, comment: str = "", game_id: str = "") -> bytes:
    """An SGF game (FF[4], GM[1]) of alternating moves starting with `first` ("b" or "w"); `game_id` is its GN."""
    from sgfmill import sgf

    game = sgf.Sgf_game(size=size)
    root = game.get_root()
    root.set("KM", float(komi))
    root.set("RU", "Tromp-Taylor")
    root.set("AP", ("azjax", "0.1.0"))
    for prop, value in (("PB", black), ("PW", white), ("RE", result), ("EV", event), ("GC", comment), ("GN", game_id)):
        if value:
            root.set(prop, value)
    root.set("DT", date or datetime.date.today().isoformat())
    colour = first
    for move in moves:
        game.extend_main_sequence().set_move(colour, vertex_to_point(move, size))
        colour = "w" if colour == "b" else "b"
    return game.serialise()


def read_go_sgf(data: bytes | str) -> dict[str, Any]:
    """size, komi, result, black, white, id (GN) and moves (GTP vertices) of an SGF game's main line."""
    from sgfmill import sgf

    return _go_fields(sgf.Sgf_game.from_bytes(data.encode() if isinstance(data, str) else data))


def _go_fields(game: Any) -> dict[str, Any]:
    """`read_go_sgf`'s fields of an sgfmill `Sgf_game`."""
    root = game.get_root()
    moves = []
    for node in game.get_main_sequence()[1:]:
        colour, point = node.get_move()
        if colour is not None:
            moves.append(point_to_vertex(point))
    return dict(size=game.get_size(), komi=game.get_komi(), result=root.get("RE") if root.has_property("RE") else "",
                black=game.get_player_name("b") or "", white=game.get_player_name("w") or "",
                id=root.get("GN") if root.has_property("GN") else "", moves=moves)


# ---------------------------------------------------------------- chess: PGN


def chess_pgn(moves: Sequence[str], *, start_fen: str = STANDARD_FEN, white: str = "", black: str = "",
              result: str = "*", event: str = "azjax", round_: str = "-", termination: str = "",
              date: str | None = None, game_id: str = "") -> str:
    """A PGN game from UCI moves (checked for legality by python-chess; raises ValueError if not); `game_id` is its
    `GameId` tag."""
    import chess
    import chess.pgn

    board = chess.Board(start_fen)
    game = chess.pgn.Game()
    game.headers["Event"] = event
    game.headers["Site"] = "azjax"
    game.headers["Date"] = (date or datetime.date.today().isoformat()).replace("-", ".")
    game.headers["Round"] = round_
    game.headers["White"] = white or "?"
    game.headers["Black"] = black or "?"
    game.headers["Result"] = result
    if start_fen != STANDARD_FEN:
        game.setup(board)
    if termination:
        game.headers["Termination"] = termination
    if game_id:
        game.headers["GameId"] = game_id
    node: Any = game
    for uci in moves:
        move = chess.Move.from_uci(uci)
        if move not in board.legal_moves:
            raise ValueError(f"illegal move {uci!r} in {board.fen()}")
        node = node.add_variation(move)
        board.push(move)
    return str(game) + "\n"


def read_chess_pgn(text: str) -> dict[str, Any]:
    """fen (start), result, white, black, termination, id (the `GameId` tag) and UCI moves of the first game in a PGN
    text."""
    import chess.pgn

    game = chess.pgn.read_game(io.StringIO(text))
    if game is None:
        raise ValueError("no PGN game found")
    if game.errors:
        raise ValueError(f"PGN errors: {game.errors}")
    return _chess_fields(game)


def _chess_fields(game: Any) -> dict[str, Any]:
    """`read_chess_pgn`'s fields of a python-chess `Game`."""
    headers = game.headers
    return dict(fen=game.board().fen(), result=headers.get("Result", "*"), white=headers.get("White", ""),
                black=headers.get("Black", ""), termination=headers.get("Termination", ""),
                id=headers.get("GameId", ""), moves=[m.uci() for m in game.mainline_moves()])


# ---------------------------------------------------------------- Connect Four: text


TEXT_RECORD_START = "# azjax game record"  # the first line of every text record


def connect_four_record(moves: Sequence[str], *, first: str = "", second: str = "", result: str = "*",
                        date: str | None = None, comment: str = "", game_id: str = "") -> str:
    """A plain text record: `TEXT_RECORD_START`, header lines `Key: value` (`Id:` is `game_id`), then `Moves:` with
    the columns (1-7) in order."""
    lines = [TEXT_RECORD_START, "Game: connect_four"]
    if game_id:
        lines.append(f"Id: {game_id}")
    lines += [
        f"Date: {date or datetime.date.today().isoformat()}",
        f"First: {first}",
        f"Second: {second}",
        f"Result: {result}",
    ]
    if comment:
        lines.append(f"Comment: {' '.join(comment.split())}")
    lines.append("Moves: " + " ".join(moves))
    return "\n".join(lines) + "\n"


def read_connect_four_record(text: str) -> dict[str, Any]:
    """Each header of a text record under its key in lower case (game, id, date, first, second, result, comment)
    and moves (the columns, strings "1"-"7"); raises ValueError on a move that is not a column."""
    out: dict[str, Any] = {"id": ""}
    for line in text.splitlines():
        if line.startswith("#") or ":" not in line:
            continue
        key, value = line.split(":", 1)
        out[key.strip().lower()] = value.strip()
    moves = out.get("moves", "").split()
    bad = [m for m in moves if m not in "1234567" or len(m) != 1]
    if bad:
        raise ValueError(f"not Connect Four columns: {bad}")
    out["moves"] = moves
    return out


# ---------------------------------------------------------------- results and files


def format_go_score(black_minus_komi: float) -> str:
    """`B+3.5`, `W+0.5` or `0` (GTP's final_score, SGF's RE)."""
    if black_minus_komi == 0:
        return "0"
    return f"B+{black_minus_komi:g}" if black_minus_komi > 0 else f"W+{-black_minus_komi:g}"


def result_string(game: Game, first_score: float | None, *, go_black_minus_komi: float | None = None,
                  reason: str = "") -> str:
    """The record's result tag from the first mover's score (+1, 0, -1; None = unfinished).

    SGF (Go): `B+margin` / `W+margin` from `go_black_minus_komi` when the game was scored, `B+R`/`W+R`
    for resignations (`reason="resign"`), `B+F`/`W+F` for forfeits (`reason="forfeit"`), `0`, `Void`.
    """
    if game.record_format == "sgf":
        if first_score is None:
            return "Void"
        if reason in ("resign", "forfeit"):
            winner = "B" if first_score > 0 else "W"
            return f"{winner}+{'R' if reason == 'resign' else 'F'}"
        if go_black_minus_komi is not None:
            return format_go_score(go_black_minus_komi)
        return "0" if first_score == 0 else ("B+" if first_score > 0 else "W+")
    if first_score is None:
        return "*"
    return "1/2-1/2" if first_score == 0 else ("1-0" if first_score > 0 else "0-1")


def game_record(game: Game, moves: Sequence[str], *, first: str, second: str, result: str,
                komi: float | None = None, start_fen: str | None = None, event: str = "azjax",
                round_: str = "-", termination: str = "", game_id: str = "") -> str | bytes:
    """The game's record in its format (bytes for SGF); `first` / `second` name the players in move order, `game_id`
    names the game in a collection (`arena_game_id`)."""
    if game.record_format == "sgf":
        return go_sgf(moves, size=game.size, komi=float(komi or 0.0), black=first, white=second, result=result,
                      event=event, comment=termination, game_id=game_id)
    if game.record_format == "pgn":
        fen = start_fen or STANDARD_FEN
        import chess

        white_first = chess.Board(fen).turn == chess.WHITE
        white, black = (first, second) if white_first else (second, first)
        return chess_pgn(moves, start_fen=fen, white=white, black=black, result=result, event=event,
                         round_=round_, termination=termination, game_id=game_id)
    if game.record_format == "text":
        return connect_four_record(moves, first=first, second=second, result=result, comment=termination,
                                   game_id=game_id)
    raise ValueError(f"no writer for {game.name!r}'s record format {game.record_format!r}")


# ---------------------------------------------------------------- collections: many games in one file

# A collection's file suffix for each record format; an arena writes OUT/games.sgf, games.pgn or games.txt.
COLLECTION_SUFFIXES = {"sgf": ".sgf", "pgn": ".pgn", "text": ".txt"}
# `arena_game_id`'s ids: pairing, agent A, agent B, game number.
ARENA_GAME_ID = re.compile(r"(\d{2})_(.+)_vs_(.+)_(\d{4})")


def arena_game_id(pairing: int, name_a: str, name_b: str, number: int) -> str:
    """`NN_A_vs_B_GGGG`, the id of game `number` (from 0) of an arena's pairing `pairing` (from 0) between agents A and
    B: the names with every character but letters, digits, `-`, `_` and `.` as `_`, cut to 40 characters."""
    return f"{pairing:02d}_{_safe(name_a)}_vs_{_safe(name_b)}_{number:04d}"


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:40]


def collection_path(out_dir: str | Path, game: Game) -> Path:
    """`out_dir/games` with the suffix of the game's record format."""
    if game.record_format not in COLLECTION_SUFFIXES:
        raise ValueError(f"no writer for {game.name!r}'s record format {game.record_format!r}")
    return Path(out_dir) / f"games{COLLECTION_SUFFIXES[game.record_format]}"


def write_collection(path: str | Path, records: Sequence[str | bytes]) -> Path:
    """Writes records of one format (`game_record`'s, each naming its game by `game_id`) to `path`, one after
    another with a blank line between two: SGF's game trees make an SGF collection, PGN's games a PGN file of many
    games, and text records a file of records each starting with `TEXT_RECORD_START`. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = [r if isinstance(r, bytes) else r.encode() for r in records]
    path.write_bytes(b"\n".join(data))
    return path


def read_collection(path: str | Path) -> list[dict[str, Any]]:
    """Every game of a collection, in order: its format's reader's fields (`read_go_sgf`, `read_chess_pgn` or
    `read_connect_four_record`, the format being the file's suffix), with `id` its id and `record` the game's own
    record as `game_record` wrote it (bytes for SGF, text otherwise).

    Raises ValueError, one line naming the file and the problem, on a game that does not parse, a game without an
    id, an id given twice or a file without a game."""
    path = Path(path)
    formats = {suffix: name for name, suffix in COLLECTION_SUFFIXES.items()}
    if path.suffix not in formats:
        raise ValueError(f"{path}: not a game collection (the suffix is not one of {sorted(formats)})")
    try:
        games = _COLLECTION_READERS[formats[path.suffix]](path.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: {' '.join(str(e).split())}") from None
    if not games:
        raise ValueError(f"{path}: holds no game")
    seen: set[str] = set()
    for k, g in enumerate(games):
        if not g["id"]:
            raise ValueError(f"{path}: game {k + 1} has no id")
        if g["id"] in seen:
            raise ValueError(f"{path}: game id {g['id']!r} appears twice")
        seen.add(g["id"])
    return games


def _read_sgf_collection(data: bytes) -> list[dict[str, Any]]:
    from sgfmill import sgf, sgf_grammar

    if not data.strip():
        return []
    # sgfmill's Sgf_game reads one game tree; its grammar module splits a collection into them.
    games = [sgf.Sgf_game.from_coarse_game_tree(tree) for tree in sgf_grammar.parse_sgf_collection(data)]
    return [dict(_go_fields(g), record=g.serialise()) for g in games]


def _read_pgn_collection(data: bytes) -> list[dict[str, Any]]:
    import chess.pgn

    text = data.decode()
    stream, out = io.StringIO(text), []
    while True:
        start = stream.tell()
        game = chess.pgn.read_game(stream)  # reads up to the blank line that ends the game
        if game is None:
            return out
        if game.errors:
            raise ValueError(f"game {len(out) + 1}: {game.errors[0]}")
        # the text as written, not python-chess's export of it (which takes longer than the parse)
        out.append(dict(_chess_fields(game), record=text[start : stream.tell()].strip("\n") + "\n"))


def _read_text_collection(data: bytes) -> list[dict[str, Any]]:
    text = data.decode()
    if not text.strip():
        return []
    if not text.startswith(TEXT_RECORD_START + "\n"):
        raise ValueError(f"the first line is not {TEXT_RECORD_START!r}")
    out = []
    for k, body in enumerate(text.split(TEXT_RECORD_START + "\n")[1:]):
        record = TEXT_RECORD_START + "\n" + body.rstrip("\n") + "\n"  # "Moves: " keeps its space
        try:
            out.append(dict(read_connect_four_record(record), record=record))
        except ValueError as e:
            raise ValueError(f"game {k + 1}: {e}") from None
    return out


_COLLECTION_READERS = {"sgf": _read_sgf_collection, "pgn": _read_pgn_collection, "text": _read_text_collection}
