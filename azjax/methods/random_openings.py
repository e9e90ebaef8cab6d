"""Random openings: every trajectory begins with a few uniformly random legal moves that nobody trains on.

Self-play from one start state with a temperature window reaches the openings its own policy likes; a
position a few random moves away from them may never be played. `RandomOpenings` wraps any game-starts seam
(`azjax.methods.alphazero.GameStarts`): after the wrapped seam has picked a slot's start (a new game, a
Go-Exploit archive state, a SAI branch), k uniformly random legal moves are played from it, k drawn uniformly
from 0..K (`random_opening_plies`). The trajectory, its temperature window and its records begin after them.
A random move that would end the game is skipped, so every start is a live position. K = 0 is the wrapped
seam itself (the build leaves the wrapper out). The wrapped seam's slot state is its own: under Go-Exploit's
search archive a trajectory begun at the initial state still counts as one after its random opening.

    starts = RandomOpenings(inner=NewGames(game), game=game, max_plies=12)
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from azjax.games import Game, GameState, where_games
from azjax.methods.alphazero import GameStartsWrapper

__all__ = ["RandomOpenings", "random_opening"]


def random_opening(game: Game, key: jax.Array, states: GameState, max_plies: int) -> tuple[GameState, jax.Array]:
    """Plays k uniformly random legal moves from each of `states` (GameState [B]), k uniform in 0..`max_plies`.

    A move that would end the game is not played (that ply is skipped), so a live state stays live.
    `max_plies` is static. Returns (states [B], int32 [B] the moves played).
    """
    b = states.current_player.shape[0]
    k_len, k_moves = jax.random.split(key)
    plies = jax.random.randint(k_len, (b,), 0, max_plies + 1)

    def ply(i: jax.Array, carry: tuple[GameState, jax.Array]) -> tuple[GameState, jax.Array]:
        s, played = carry
        logits = jnp.where(s.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(jax.random.fold_in(k_moves, i), logits)
        nxt = jax.vmap(game.step)(s, action)
        move = (i < plies) & ~nxt.terminated & s.legal_action_mask.any(axis=-1)
        return where_games(move, nxt, s), played + move.astype(jnp.int32)

    return jax.lax.fori_loop(0, max_plies, ply, (states, jnp.zeros((b,), jnp.int32)))


@dataclasses.dataclass(frozen=True)
class RandomOpenings(GameStartsWrapper):
    """A game-starts seam whose starts are `inner`'s, each followed by a random opening of 0..`max_plies` moves.

    Everything else (slots, pool, statistics, columns) is `inner`'s. Adds the column `opening_plies`: the
    random moves played per trajectory begun this step, on average.
    """

    game: Game
    max_plies: int
    key_salt: ClassVar[int] = 0x0DE
    stat: ClassVar[str] = "opening_plies_sum"
    column: ClassVar[str] = "opening_plies"

    def __post_init__(self) -> None:
        if self.max_plies < 1:
            raise ValueError(f"random openings need max_plies >= 1, got {self.max_plies}")

    def change(self, key: jax.Array, games: GameState) -> tuple[GameState, jax.Array]:
        return random_opening(self.game, key, games, self.max_plies)
