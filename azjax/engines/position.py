"""A host-side game position: the start state (game start with a komi, or a chess FEN) plus the moves played,
in the game's notation; `parse_position` reads one from a line (moves, or a chess FEN with moves).
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

    def set_komi(self, komi: float) -> None:
        """Changes the komi of the current game, keeping its moves."""
        actions = list(self.actions)
        self.reset(komi=komi)
        for a in actions:
            self.play_action(a)

    def set_position(self, moves: Sequence[str] = (), *, fen: str | None = None, komi: float | None = None) -> None:
        """Start position plus moves in the game's notation; on error the position is unchanged."""
        saved = (list(self.actions), list(self.moves), list(self.states), self.komi, self.start_fen)
        try:
            self.reset(fen=fen, komi=komi)
            for m in moves:
                self.play(m)
        except ValueError:
            self.actions, self.moves, self.states, self.komi, self.start_fen = saved
            raise

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

