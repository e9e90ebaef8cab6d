"""A host-side game position: the start state (game start with a komi, or a chess FEN) plus the moves played,
in the game's notation; `parse_position` reads one from a line (moves, or a chess FEN with moves).

Go's setup stones (handicap stones, an SGF's `AB`/`AW`) are played as the position's first actions
(`Position.place_stones`): pgx builds a position only by moves, so the stones go down one by one, the colour
without a stone left passing in between, and `Position.setup` counts those actions. This gives the board, the side
to move and the superko rules of the set-up position: no two passes follow each other (each pass is followed by a
stone), no stone captures (checked: the board must hold exactly the stones asked for), so every position on the way
is new. What differs from a position set up in one step: the network's history planes show the stones arriving
one by one (its input planes hold the last 8 boards), the boards on the way count for positional superko (a later
position that repeats one of them, with only some of the setup stones and no other stone, is a repetition), and the
actions count toward the game's move cap (8 x size², far beyond any real game). `undo` stops at the setup.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import STANDARD_FEN, Game, GameState


@functools.lru_cache(maxsize=64)
def start_state(game: Game, komi: float = 0.0, fen: str | None = None) -> GameState:
    """`game.start_position(komi, fen)`, cached (pgx's eager init and FEN parsing take up to seconds)."""
    with jax.ensure_compile_time_eval():
        return game.start_position(komi, fen)


@functools.cache
def jitted_step(game: Game):
    """`game.step`, jitted once per game (the positions and the engine share it)."""
    return jax.jit(game.step)


@functools.cache
def jitted_black_margin(game: Game):
    """`game.black_margin`, jitted once per game: run eagerly, its flood fill's while loop (a new closure each call)
    compiled again at every call, `final_score` on a GUI's clock included."""
    return jax.jit(game.black_margin)


def stack_states(states: Sequence[GameState]) -> GameState:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


class Position:
    """A game position: the start (game start with a komi, or a chess FEN) plus the moves played.

    Args:
      game: the game (for chess, the standard-start game: other starts come from `fen`).
      start_fen: games with FEN (chess) only: the default start position of `reset`.
    """

    def __init__(self, game: Game, start_fen: str | None = None):
        self.game = game
        self.default_start_fen = (start_fen or STANDARD_FEN) if game.has_fen else None
        self.komi = float(game.komi)
        self.start_fen = self.default_start_fen
        self.actions: list[int] = []
        self.moves: list[str] = []  # the actions in the game's notation
        self.states: list[GameState] = []
        self.setup = 0  # Go: the first `setup` actions place setup stones (`place_stones`), not moves of the game
        self.reset()

    @property
    def state(self) -> GameState:
        return self.states[-1]

    def reset(self, *, komi: float | None = None, fen: str | None = None) -> None:
        """A new game from the start (Go: with `komi`, default the current komi; chess: from `fen`,
        default the checkpoint's start position). Raises ValueError for a bad komi or FEN."""
        if komi is not None:
            self.komi = self.game.check_komi(komi)
        if fen is not None and not self.game.has_fen:
            raise ValueError(f"FEN positions apply to chess only, not {self.game.name}")
        self.start_fen = fen or self.default_start_fen  # None for games without FEN
        start = start_state(self.game, self.komi, self.start_fen)
        self.actions = []
        self.moves = []
        self.states = [start]
        self.setup = 0

    def set_komi(self, komi: float) -> None:
        """Changes the komi of the current game, keeping its moves (and its setup stones)."""
        actions, setup = list(self.actions), self.setup
        self.reset(komi=komi)
        for a in actions:
            self.play_action(a)
        self.setup = setup

    def place_stones(self, black: Sequence[str], white: Sequence[str] = (), to_move: str | None = None) -> None:
        """Go: sets up stones on the empty board of a new game (handicap stones: `black` only), as the position's
        first actions: the colours' stones in turn, Black first, a colour with none left passing while the other
        still has some; then a pass if `to_move` ("b" or "w") is not the side to move (default: the side after the
        last stone). Raises ValueError (the position unchanged) if the board is not empty, a vertex is bad or
        repeated, or a stone would capture or have no liberty."""
        if not self.game.is_go:
            raise ValueError(f"setup stones apply to Go only, not {self.game.name}")
        if self.actions:
            raise ValueError("board not empty")
        stones = {"b": list(black), "w": list(white)}
        points: dict[int, str] = {}
        for colour, vertices in stones.items():
            for v in vertices:
                action = self._setup_action(v)
                if action in points:
                    raise ValueError(f"repeated vertex {self.move_str(action)}")
                points[action] = colour
        order: list[str] = []
        colour = "b"
        while stones["b"] or stones["w"]:
            order.append(stones[colour].pop(0) if stones[colour] else "pass")
            colour = "w" if colour == "b" else "b"
        if to_move is not None and to_move != colour:
            order.append("pass")
        try:
            for move in order:
                self.play(move)
            expected = np.zeros(self.game.num_actions - 1, np.int8)
            for action, colour in points.items():
                expected[action] = 1 if colour == "b" else -1
            if not np.array_equal(self.game.board(self.state).reshape(-1), expected):
                raise ValueError("the stones capture each other")
        except ValueError as err:
            self.reset()
            raise ValueError(f"cannot set up these stones: {err}") from None
        self.setup = len(self.actions)

    def _setup_action(self, vertex: str) -> int:
        """A board point's action (a vertex, not a pass): every point is legal on the empty start board."""
        if vertex.strip().lower() == "pass":
            raise ValueError("a pass is not a stone")
        return self.game.parse_action(self.states[0], vertex)

    def setup_stones(self) -> tuple[list[str], list[str]]:
        """Go: the setup stones (Black's, White's) in the order they were placed (`place_stones`)."""
        black: list[str] = []
        white: list[str] = []
        for i, move in enumerate(self.moves[: self.setup]):
            if move != "pass":
                (black if i % 2 == 0 else white).append(move)
        return black, white

    def game_moves(self) -> list[tuple[str, str]]:
        """(colour, move) of the moves played after the setup stones, passes included."""
        return [(self.game.side_to_move(self.states[i], i), m)
                for i, m in enumerate(self.moves[self.setup :], start=self.setup)]

    def set_position(self, moves: Sequence[str] = (), *, fen: str | None = None, komi: float | None = None) -> None:
        """Start position plus moves in the game's notation; on error the position is unchanged."""
        saved = self.snapshot()
        try:
            self.reset(fen=fen, komi=komi)
            for m in moves:
                self.play(m)
        except ValueError:
            self.restore(saved)
            raise

    def snapshot(self) -> tuple:
        """What `restore` needs to put the position back as it is now."""
        return list(self.actions), list(self.moves), list(self.states), self.komi, self.start_fen, self.setup

    def restore(self, saved: tuple) -> None:
        self.actions, self.moves, self.states, self.komi, self.start_fen, self.setup = saved

    def play(self, text: str) -> int:
        """Plays a move in the game's notation; raises ValueError if malformed, illegal or the game is over."""
        self.check_running()
        action = self.game.parse_action(self.state, text)
        self.play_action(action)
        return action

    def play_action(self, action: int) -> None:
        self.check_running()
        if not 0 <= int(action) < self.game.num_actions:
            raise ValueError(f"no such action: {action}")
        if not bool(np.asarray(self.state.legal_action_mask)[int(action)]):
            raise ValueError(f"illegal move: {self.move_str(int(action))!r}")
        move = self.move_str(int(action))
        self.states.append(jitted_step(self.game)(self.state, jnp.int32(action)))
        self.actions.append(int(action))
        self.moves.append(move)

    def undo(self) -> None:
        if not self.actions:
            raise ValueError("no move to undo")
        if len(self.actions) <= self.setup:
            raise ValueError("cannot undo the setup stones (handicap): clear_board starts a new game")
        self.actions.pop()
        self.moves.pop()
        self.states.pop()

    def move_str(self, action: int, state: GameState | None = None) -> str:
        return self.game.action_to_str(self.state if state is None else state, int(action))

    def move_history(self) -> list[str]:
        return list(self.moves)

    def legal_moves(self) -> list[str]:
        legal = np.flatnonzero(np.asarray(self.state.legal_action_mask))
        return [self.move_str(int(a)) for a in legal]

    @property
    def is_over(self) -> bool:
        return bool(self.state.terminated)

    @property
    def cut_short(self) -> bool:
        """The game was ended by the move cap (`Game.max_moves`, Go), not by its rules; it is scored where it stands."""
        return bool(self.game.cut_short(self.state))

    def check_running(self) -> None:
        """Raises ValueError if the game is over, saying so when the move cap cut it short."""
        if self.is_over:
            if self.cut_short:
                raise ValueError(f"the game is over: cut short by the {self.game.max_moves}-move cap")
            raise ValueError("the game is over")

    def to_move(self) -> str:
        """"b" or "w": Go's colours; chess: the side to move; Connect Four: "b" for the first player."""
        return self.game.side_to_move(self.state, len(self.actions))

    def render(self) -> str:
        return self.game.render(self.state)

    def fen(self) -> str:
        return self.game.fen(self.state)

    def go_score(self) -> float:
        """Go: Black's Tromp-Taylor area lead minus komi (positive: Black wins)."""
        return float(jitted_black_margin(self.game)(self.state))

    def outcome(self) -> float | None:
        """Finished games: the result for the player who moved first from the start (+1, 0, -1)."""
        if not self.is_over:
            return None
        first = int(np.asarray(self.states[0].current_player))
        return float(np.asarray(self.state.rewards)[first]) if len(self.states) > 1 else 0.0


def parse_position(position: Position, line: str) -> None:
    """Sets `position` from one line: moves in the game's notation from the start (spaces or commas
    between them); for chess also `FEN`, `FEN moves m1 m2 ...`, `startpos moves ...`. Raises
    ValueError (the position is then unchanged)."""
    text = line.strip()
    fen = None
    if position.game.has_fen:
        if text.startswith("startpos"):
            text = text[len("startpos") :].strip()
        elif "/" in text.split(" moves ")[0]:
            fen, _, text = text.partition(" moves ")
            fen = fen.strip()
        if text.startswith("moves"):
            text = text[len("moves") :]
    moves = text.replace(",", " ").split()
    position.set_position(moves, fen=fen)

