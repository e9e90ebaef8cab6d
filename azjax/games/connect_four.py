"""Connect Four (pgx's) with columns 1-7 as its notation."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from azjax.games.base import Game, GameState


@dataclasses.dataclass(frozen=True)
class ConnectFour(Game):
    observation_is_position: ClassVar[bool] = True

    def render(self, state: GameState) -> str:
        board = np.asarray(state.env._x.board).reshape(6, 7)
        marks = {-1: ".", 0: "X", 1: "O"}
        rows = [" ".join(marks[int(v)] for v in row) for row in board]
        return "\n".join(rows + ["1 2 3 4 5 6 7"])

    def action_to_str(self, state: GameState, action: int) -> str:
        return str(int(action) + 1)

    def parse_action(self, state: GameState, text: str) -> int:
        text = text.strip()
        if not text.isdigit() or not 1 <= int(text) <= 7:
            raise ValueError(f"not a Connect Four column (1-7): {text!r}")
        return self._check_legal(state, int(text) - 1, text)
