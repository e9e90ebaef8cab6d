"""Odds starts: a share of self-play games begin with one side a piece short (docs/methods.md section 13).

KataGo plays a share of its self-play games with handicap stones, so its value learns what an uneven position
is worth; chess's handicap is piece odds, the games search-contempt's paper plays. From the standard start a
young network meets a queen or a rook missing only after a blunder deep in a game, and its value near the
opening knows material only weakly. `OddsStarts` wraps any game-starts seam (`azjax.methods.alphazero.GameStarts`):
each start the wrapped seam picks is replaced, with probability `odds_start_prob`, by the standard position
with one of White's or Black's queen, rooks, bishops or knights removed (`odds_fens`: 14 positions, White to
move), drawn uniformly. Random openings, when on, follow it. `odds_start_prob` = 0 is the wrapped seam itself
(the build leaves the wrapper out).

    starts = OddsStarts(inner=NewGames(game), game=game, odds_start_prob=0.1)
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import Game, GameState, where_games
from azjax.methods.alphazero import GameStartsWrapper

__all__ = ["OddsStarts", "odds_fens"]

# The squares of the pieces an odds start removes: queen, both rooks, both bishops, both knights.
_ODDS_SQUARES = ("d1", "a1", "h1", "c1", "f1", "b1", "g1")


def odds_fens() -> tuple[str, ...]:
    """The 14 odds starts: the standard position less one of White's (then Black's) queen, rooks, bishops or
    knights, White to move; a removed rook takes its castling right with it."""
    import chess

    fens = []
    for colour in (chess.WHITE, chess.BLACK):
        for name in _ODDS_SQUARES:
            square = chess.parse_square(name)
            board = chess.Board()
            board.remove_piece_at(square if colour == chess.WHITE else chess.square_mirror(square))
            board.castling_rights = board.clean_castling_rights()
            fens.append(board.fen())
    return tuple(fens)


@functools.cache
def _odds_states(game: Game) -> GameState:
    # Concrete numpy arrays even when first asked for inside a trace (the cache must not hold tracers).
    with jax.ensure_compile_time_eval():
        states = [game.start_position(fen=fen) for fen in odds_fens()]
        return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *states)


@dataclasses.dataclass(frozen=True)
class OddsStarts(GameStartsWrapper):
    """A game-starts seam whose starts are `inner`'s, each replaced by a uniformly drawn odds start (one of
    `odds_fens()`) with probability `odds_start_prob` (a float, or a traced scalar in a sweep).

    Everything else (slots, pool, statistics, columns) is `inner`'s. Adds the column `odds_share`: the share of
    the step's new games begun at odds.
    """

    game: Game
    odds_start_prob: Any
    key_salt: ClassVar[int] = 0x0DD5
    stat: ClassVar[str] = "odds_starts_sum"
    column: ClassVar[str] = "odds_share"

    def __post_init__(self) -> None:
        if not self.game.is_chess:
            raise ValueError(f"odds starts apply to chess only, not {type(self.game).__name__}")

    def change(self, key: jax.Array, games: GameState) -> tuple[GameState, jax.Array]:
        """games [B] with each replaced by an odds start with probability `odds_start_prob`; (games, bool [B])."""
        starts = _odds_states(self.game)  # [14], constants of the compiled program
        b = games.current_player.shape[0]
        k_use, k_which = jax.random.split(key)
        use = jax.random.uniform(k_use, (b,)) < self.odds_start_prob
        which = jax.random.randint(k_which, (b,), 0, starts.current_player.shape[0])
        odds = jax.tree.map(lambda x: jnp.asarray(x)[which], starts)
        return where_games(use, odds, games), use
