"""Game records: SGF for Go (sgfmill), PGN for chess (python-chess), a small text format for
Connect Four. Moves are in the game's notation (`azjax.games`: Go vertices / `pass`, UCI moves,
Connect Four columns 1-7).

    data = go_sgf(["D4", "E5", "pass", "pass"], size=9, komi=7.5, black="a", white="b", result="W+7.5")
    text = chess_pgn(["e2e4", "e7e5"], white="a", black="b", result="*")
    text = connect_four_record(["4", "4", "3"], first="a", second="b", result="*")
    path = write_record(dir / "game_0001", make_game("go_9x9"), moves, first="a", second="b", result="B+2.5",
                        komi=7.5)

The game says which format it is written in (`Game.record_format`). Results are written in each format's
convention: SGF `B+3.5`, `W+R` (resignation), `B+F`
(forfeit: an illegal move), `0` (draw), `Void` (unfinished); PGN and the Connect Four record
`1-0`, `0-1`, `1/2-1/2`, `*` (unfinished).
"""

from __future__ import annotations

import datetime
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
           first: str = "b", event: str = "", date: str | None = None, comment: str = "") -> bytes:
    """An SGF game (FF[4], GM[1]) of alternating moves starting with `first` ("b" or "w")."""
    from sgfmill import sgf

    game = sgf.Sgf_game(size=size)
    root = game.get_root()
    root.set("KM", float(komi))
    root.set("RU", "Tromp-Taylor")
    root.set("AP", ("azjax", "0.1.0"))
    for prop, value in (("PB", black), ("PW", white), ("RE", result), ("EV", event), ("GC", comment)):
        if value:
            root.set(prop, value)
    root.set("DT", date or datetime.date.today().isoformat())
    colour = first
    for move in moves:
        game.extend_main_sequence().set_move(colour, vertex_to_point(move, size))
        colour = "w" if colour == "b" else "b"
    return game.serialise()


def read_go_sgf(data: bytes | str) -> dict[str, Any]:
    """size, komi, result, black, white and moves (GTP vertices) of an SGF game's main line."""
    from sgfmill import sgf

    game = sgf.Sgf_game.from_bytes(data.encode() if isinstance(data, str) else data)
    root = game.get_root()
    moves = []
    for node in game.get_main_sequence()[1:]:
        colour, point = node.get_move()
        if colour is not None:
            moves.append(point_to_vertex(point))
    return dict(size=game.get_size(), komi=game.get_komi(), result=root.get("RE") if root.has_property("RE") else "",
                black=game.get_player_name("b") or "", white=game.get_player_name("w") or "", moves=moves)


# ---------------------------------------------------------------- chess: PGN


def chess_pgn(moves: Sequence[str], *, start_fen: str = STANDARD_FEN, white: str = "", black: str = "",
              result: str = "*", event: str = "azjax", round_: str = "-", termination: str = "",
              date: str | None = None) -> str:
    """A PGN game from UCI moves (checked for legality by python-chess; raises ValueError if not)."""
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
    node: Any = game
    for uci in moves:
        move = chess.Move.from_uci(uci)
        if move not in board.legal_moves:
            raise ValueError(f"illegal move {uci!r} in {board.fen()}")
        node = node.add_variation(move)
        board.push(move)
    return str(game) + "\n"


def read_chess_pgn(text: str) -> dict[str, Any]:
    """fen (start), result, white, black and UCI moves of the first game in a PGN text."""
    import io

    import chess.pgn

    game = chess.pgn.read_game(io.StringIO(text))
    if game is None:
        raise ValueError("no PGN game found")
    if game.errors:
        raise ValueError(f"PGN errors: {game.errors}")
    return dict(fen=game.board().fen(), result=game.headers.get("Result", "*"), white=game.headers.get("White", ""),
                black=game.headers.get("Black", ""), moves=[m.uci() for m in game.mainline_moves()])


# ---------------------------------------------------------------- Connect Four: text


def connect_four_record(moves: Sequence[str], *, first: str = "", second: str = "", result: str = "*",
                        date: str | None = None, comment: str = "") -> str:
    """A plain text record: header lines `Key: value`, then `Moves:` with the columns (1-7) in order."""
    lines = [
        "# azjax game record",
        "Game: connect_four",
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
    out: dict[str, Any] = {}
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
                round_: str = "-", termination: str = "") -> tuple[str | bytes, str]:
    """(record, file suffix) in the game's format; `first` / `second` name the players in move order."""
    if game.record_format == "sgf":
        data = go_sgf(moves, size=game.size, komi=float(komi or 0.0), black=first, white=second, result=result,
                      event=event, comment=termination)
        return data, ".sgf"
    if game.record_format == "pgn":
        fen = start_fen or STANDARD_FEN
        import chess

        white_first = chess.Board(fen).turn == chess.WHITE
        white, black = (first, second) if white_first else (second, first)
        return chess_pgn(moves, start_fen=fen, white=white, black=black, result=result, event=event,
                         round_=round_, termination=termination), ".pgn"
    if game.record_format == "text":
        return connect_four_record(moves, first=first, second=second, result=result, comment=termination), ".txt"
    raise ValueError(f"no writer for {game.name!r}'s record format {game.record_format!r}")


def write_record(stem: str | Path, game: Game, moves: Sequence[str], **kwargs: Any) -> Path:
    """Writes `game_record(...)` to `stem` + the format's suffix; returns the path."""
    data, suffix = game_record(game, moves, **kwargs)
    path = Path(str(stem) + suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path
