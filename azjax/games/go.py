"""Go with area scoring (Tromp-Taylor) and a komi per game: pgx builds the board with komi 0 and finished games are
rescored here with each game's own komi; GTP vertices (`D4`, `pass`) as its notation."""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pgx._src.games.go as pgx_go

from azjax.games.base import Game, GameState

Array = jax.Array

GO_COLUMNS = "ABCDEFGHJKLMNOPQRST"  # GTP skips I


@dataclasses.dataclass(frozen=True)
class Go(Game):
    """Go with area scoring and a komi per game (stored in `GameState.komi`)."""

    size: int = 9
    has_komi: ClassVar[bool] = True
    scored: ClassVar[bool] = True
    record_format: ClassVar[str] = "sgf"

    @property
    def is_go(self) -> bool:
        return True

    def check_komi(self, komi: float) -> float:
        komi = float(komi)
        if not math.isfinite(komi) or abs(komi) > 2 * self.size**2:
            raise ValueError(f"unreasonable komi {komi}")
        return komi

    def side_to_move(self, state: GameState, num_moves: int) -> str:
        return "b" if int(self.color_to_move(state)) == 0 else "w"

    def move_to_gtp(self, move: str) -> str:
        return move.upper()

    def move_from_gtp(self, text: str) -> str:
        return text.lower()

    def step(self, state: GameState, action: Array) -> GameState:
        env = self.env.step(state.env, action)
        x = env._x
        just_ended = env.terminated & ~state.env.terminated
        # Only a game that just ended is scored: an empty board's fill stops at once, so a batch's stops early.
        black_lead = board_lead_black(x._replace(board=jnp.where(just_ended, x.board, 0)), self.size)
        black_wins = black_lead - state.komi > 0
        color_rewards = jnp.where(black_wins, jnp.float32([1, -1]), jnp.float32([-1, 1]))
        # Positional superko: pgx lets the move that repeats a position lose (the side now to move wins).
        psk_rewards = jnp.float32([-1, -1]).at[x.color].set(1.0)
        color_rewards = jnp.where(x.is_psk, psk_rewards, color_rewards)
        # An illegal move ends the game with pgx's penalty for the mover: keep it, do not rescore the board.
        illegal = ~state.env.legal_action_mask[action]
        rewards = jnp.where(just_ended & ~illegal, color_rewards[env._player_order], env.rewards)
        return state.replace(env=env.replace(rewards=rewards))

    def cut_short(self, state: GameState) -> Array:
        # Two passes or a superko loss that fall on the cap's move are the game's own end.
        x = state.env._x
        return state.terminated & (x.step_count >= self.max_moves) & (x.consecutive_pass_count < 2) & ~x.is_psk

    def black_margin(self, state: GameState) -> Array:
        """float32 []: Black's area lead on the board minus the game's komi (> 0: Black wins on the board)."""
        return board_lead_black(state.env._x, self.size) - state.komi

    def color_to_move(self, state: GameState) -> Array:
        """int32 []: 0 = Black, 1 = White."""
        return state.env._x.color

    def board(self, state: GameState) -> np.ndarray:
        """int8 [size, size]: +1 Black, -1 White, 0 empty; row 0 is the top (GTP row `size`)."""
        return np.sign(np.asarray(state.env._x.board)).reshape(self.size, self.size).astype(np.int8)

    def render(self, state: GameState) -> str:
        board = self.board(state)
        cols = "   " + " ".join(GO_COLUMNS[: self.size])
        rows = [cols]
        for r in range(self.size):
            marks = " ".join({1: "X", -1: "O", 0: "."}[int(v)] for v in board[r])
            rows.append(f"{self.size - r:2d} {marks} {self.size - r:2d}")
        rows.append(cols)
        color = "Black" if int(self.color_to_move(state)) == 0 else "White"
        rows.append(f"komi {float(state.komi):g}, {color} to move")
        return "\n".join(rows)

    def action_to_str(self, state: GameState, action: int) -> str:
        action = int(action)
        if action == self.size * self.size:
            return "pass"
        row, col = divmod(action, self.size)
        return f"{GO_COLUMNS[col]}{self.size - row}"

    def parse_action(self, state: GameState, text: str) -> int:
        t = text.strip().upper()
        if t == "PASS":
            return self._check_legal(state, self.size * self.size, text)
        if len(t) < 2 or t[0] not in GO_COLUMNS[: self.size] or not t[1:].isdigit():
            raise ValueError(f"not a Go vertex on {self.size}x{self.size}: {text!r}")
        col, rank = GO_COLUMNS.index(t[0]), int(t[1:])
        if not 1 <= rank <= self.size:
            raise ValueError(f"not a Go vertex on {self.size}x{self.size}: {text!r}")
        return self._check_legal(state, (self.size - rank) * self.size + col, text)


def board_lead_black(x: pgx_go.GameState, size: int) -> Array:
    """float32 []: Black's area minus White's area (stones + surrounded empty points), before komi."""
    scores = pgx_go._count_scores(x, size)
    return (scores[0] - scores[1]).astype(jnp.float32)
