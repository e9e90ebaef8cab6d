"""SGF in and out of an engine's Go position (sgfmill): GTP's `loadsgf` and `printsgf`.

    record = read_sgf(Path("game.sgf").read_bytes())   # size, komi, setup stones, side to move, moves
    load_sgf(position, record, move_number=30)         # the position before move 30
    data = position_sgf(position)                      # the game so far as SGF (bytes)

Reading takes the main line. The root's setup stones (`AB`, `AW`; handicap stones are `AB`) and its `PL` go down
as the position's setup (`Position.place_stones`: a stone at a time, passes between); the moves follow, a move
by the colour not to move after a pass of the other colour (as GTP's `play` does). Refused, with the position
left as it was: another board size than the engine's, another game than Go (`GM`), `AE` or setup stones after the
root, an illegal move, a pass inserted before a move of the same colour that would end the game, malformed SGF.
A file without `KM` keeps the current komi.

Writing gives `SZ`, `KM`, `RU[Tromp-Taylor]`, the setup stones as `AB`/`AW` (with `HA` when they are Black's
handicap stones of 2 or more, and `PL`, the side to move after them), the moves (passes as empty `B[]`/`W[]`,
including the passes `play` inserted for a colour playing out of turn) and, once the game is over, `RE`.
"""

from __future__ import annotations

import dataclasses
import datetime

from azjax.engines.position import Position
from azjax.engines.records import format_go_score, point_to_vertex, vertex_to_point


@dataclasses.dataclass(frozen=True)
class SgfRecord:
    """The main line of an SGF Go game.

    Attributes:
      size: the board size (`SZ`, default 19).
      komi: `KM`, or None where the file has none.
      black, white: the root's setup stones (`AB`, `AW`), GTP vertices in reading order.
      to_move: `PL` ("b" or "w"), or None.
      moves: (colour, GTP vertex or "pass") of the main line's moves.
    """

    size: int
    komi: float | None
    black: tuple[str, ...]
    white: tuple[str, ...]
    to_move: str | None
    moves: tuple[tuple[str, str], ...]


def read_sgf(data: bytes | str) -> SgfRecord:
    """The main line of the first game in SGF `data`; ValueError for malformed or unsupported SGF."""
    from sgfmill import sgf

    raw = data.encode() if isinstance(data, str) else data
    try:
        game = sgf.Sgf_game.from_bytes(raw)
        root = game.get_root()
        if root.has_property("GM") and root.get("GM") != 1:
            raise ValueError(f"not a Go game (GM[{root.get('GM')}])")
        size = game.get_size()
        komi = game.get_komi() if root.has_property("KM") else None
        black, white, empty = root.get_setup_stones()
        if empty:
            raise ValueError("cannot clear points (AE)")
        to_move = root.get("PL") if root.has_property("PL") else None
        moves = []
        for i, node in enumerate(game.get_main_sequence()):
            if i > 0 and node.has_setup_stones():
                raise ValueError("cannot set up stones after the first node (AB/AW/AE)")
            colour, point = node.get_move()
            if colour is not None:
                moves.append((colour, point_to_vertex(point)))
    except ValueError as err:
        raise ValueError(f"bad SGF: {err}") from None

    def vertices(points: set[tuple[int, int]]) -> tuple[str, ...]:
        return tuple(point_to_vertex(p) for p in sorted(points, key=lambda p: (-p[0], p[1])))

    return SgfRecord(size, komi, vertices(black), vertices(white), to_move, tuple(moves))


def load_sgf(position: Position, record: SgfRecord, move_number: int | None = None) -> None:
    """Sets `position` (a Go game) to `record`'s: its komi (if it has one), setup stones and moves, up to the
    position before move `move_number` (1 = the first move; default: every move). ValueError (the position
    unchanged) if it cannot."""
    game = position.game
    if not game.is_go:
        raise ValueError(f"SGF games are Go games; this engine plays {game.name}")
    if record.size != game.size:  # type: ignore[attr-defined]
        raise ValueError(f"the SGF's board is {record.size}x{record.size}; this engine plays "
                         f"{game.size}x{game.size}")  # type: ignore[attr-defined]
    moves = record.moves if move_number is None else record.moves[: max(move_number - 1, 0)]
    saved = position.snapshot()
    try:
        position.reset(komi=record.komi)
        if record.black or record.white or record.to_move:
            position.place_stones(record.black, record.white, record.to_move)
        for number, (colour, move) in enumerate(moves, start=1):
            if position.to_move() != colour:  # a colour moving twice: the other passes between, as `play` does
                position.play("pass")
                if position.is_over:
                    raise ValueError(f"move {number} ({colour} {move}) follows a pass of its colour and two passes "
                                     "would end the game")
            try:
                position.play(move)
            except ValueError as err:
                raise ValueError(f"move {number} ({colour} {move}): {err}") from None
    except ValueError:
        position.restore(saved)
        raise


def position_sgf(position: Position, *, date: str | None = None) -> bytes:
    """The Go game of `position` as SGF: setup stones, then the moves played."""
    from sgfmill import sgf

    game = position.game
    size = game.size  # type: ignore[attr-defined]
    record = sgf.Sgf_game(size=size)
    root = record.get_root()
    root.set("KM", float(position.komi))
    root.set("RU", "Tromp-Taylor")
    root.set("AP", ("azjax", "0.1.0"))
    root.set("DT", date or datetime.date.today().isoformat())
    black, white = position.setup_stones()
    if black or white:
        root.set_setup_stones([vertex_to_point(v, size) for v in black], [vertex_to_point(v, size) for v in white])
        if black and not white and len(black) >= 2:
            root.set("HA", len(black))
    if position.setup:
        root.set("PL", game.side_to_move(position.states[position.setup], position.setup))
    for colour, move in position.game_moves():
        record.extend_main_sequence().set_move(colour, vertex_to_point(move, size))
    if position.is_over:
        if bool(position.state.env._x.is_psk):  # positional superko: the repeating move lost
            outcome = position.outcome() or 0.0
            root.set("RE", "B+" if outcome > 0 else "W+")
        else:
            root.set("RE", format_go_score(position.go_score()))
    return record.serialise()
