"""A cheap chess evaluator: material (and optionally mobility), usable as the search's value.

`material_evaluator(...)` returns an `azjax.search.Evaluator`,

    logits, value = evaluate(params, states)     # states: GameState [B] (chess)

with `value` [B] from the view of the player to move and `logits` [B, 4672] the prior over moves.
`params` is ignored (pass None). Everything is vectorised and jittable.

Value. pgx keeps the chess board from the mover's side: `board_arrays(states).board` is int [64] with the
mover's pieces positive (1..6 = P, N, B, R, Q, K) and the opponent's negative. The material
difference in pawns is

    diff = sum_sq  PIECE_VALUES[|b|] * sign(b),      PIECE_VALUES = (0, P=1, N=3, B=3, R=5, Q=9, K=0),

optionally plus a mobility term `mobility * (legal moves of the mover - legal moves the opponent
would have if it were to move)`, and the value is squashed:

    value = tanh(scale * diff).

Scale: the default `scale = 0.2` maps a pawn to 0.20, a minor piece to 0.54, a rook to 0.76 and a
queen to 0.95, close to Leela's Q for those material edges (Lc0's cp = 111.7 tan(1.562 Q) gives a
queen (~9 pawns) Q ~ 0.93); no edge reaches +-1, which is kept for real wins (checkmate) by the
search's terminal rewards.

Prior. Uniform over legal moves (illegal moves are masked by the search anyway). With
`capture_prior > 0` a capture of a piece worth v pawns gets logit `capture_prior * v`
(most-valuable-victim first; en passant counts as a pawn capture), and a promotion to a queen gets
`capture_prior * 8`, so the search looks at captures first.

Mobility (off by default) costs one extra legal-move generation per evaluation (about as much as a
pgx step): the opponent's moves are generated on the flipped board without en passant or castling
rights, an approximation that is fine for an evaluation term.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import PIECE_VALUES, GameState, board_arrays, material_diff, material_result
from azjax.games.chess_rules import TO_SQUARE, legal_actions

__all__ = ["DEFAULT_SCALE", "PIECE_VALUES", "adjudicate_by_material", "capture_values", "material_diff",
           "material_evaluator"]

DEFAULT_SCALE = 0.2
NUM_CHESS_ACTIONS = 64 * 73


def _opponent_mobility(x: Any) -> jax.Array:
    """int32 []: legal moves of the opponent if it were to move now (one unbatched chess state's `_x`)."""
    board = -jnp.flip(x.board.reshape(8, 8), axis=1).flatten()
    actions, _, _ = legal_actions(board, jnp.zeros_like(x.castling_rights), jnp.int32(-1))
    return jnp.sum(actions >= 0).astype(jnp.int32)


def _to_squares() -> np.ndarray:
    """int32 [4672]: the target square of each action label (-1 where the label is never a move)."""
    return TO_SQUARE.reshape(-1)


def capture_values(board: jax.Array, en_passant: jax.Array) -> jax.Array:
    """float32 [B, 4672]: pawns captured by each action (0 for quiet moves), plus 8 for a queening.

    Args:
      board: int [B, 64] from the mover's side.
      en_passant: int [B]: the en-passant target square (-1 if none).
    """
    to = jnp.asarray(_to_squares())  # [A]
    from_ = jnp.arange(NUM_CHESS_ACTIONS, dtype=jnp.int32) // 73
    plane = jnp.arange(NUM_CHESS_ACTIONS, dtype=jnp.int32) % 73
    values = jnp.asarray(PIECE_VALUES, jnp.float32)
    target = jnp.take(board, jnp.maximum(to, 0), axis=1)  # [B, A]
    victim = jnp.where((to[None] >= 0) & (target < 0), values[jnp.abs(target)], 0.0)
    mover_piece = jnp.take(board, from_, axis=1)  # [B, A]
    pawn = mover_piece == 1
    diagonal = from_[None] // 8 != to[None] // 8  # a pawn changing file
    en_passant_capture = pawn & (to[None] == en_passant[:, None]) & (to[None] >= 0) & diagonal
    victim = jnp.where(en_passant_capture, 1.0, victim)
    queening = pawn & (from_[None] % 8 == 6) & (plane[None] >= 9)
    return victim + jnp.where(queening, 8.0, 0.0)


def material_evaluator(scale: float = DEFAULT_SCALE, mobility: float = 0.0, capture_prior: float = 0.0):
    """A chess `Evaluator`: (params, states [B]) -> (prior logits [B, 4672], value [B]).

    Args:
      scale: value = tanh(scale * diff), diff in pawns (see the module doc for the default 0.2).
      mobility: pawns per legal move of difference (e.g. 0.05); 0 = material only (cheaper).
      capture_prior: prior logit per pawn of captured material (0 = uniform prior over legal moves).

    The same arguments give the same function object, so jit caches keyed on it stay warm.
    """
    return _material_evaluator(float(scale), float(mobility), float(capture_prior))


_EVALUATORS: dict[tuple[float, float, float], Any] = {}


def _material_evaluator(scale: float, mobility: float, capture_prior: float):
    key = (scale, mobility, capture_prior)
    if key in _EVALUATORS:
        return _EVALUATORS[key]

    def evaluate(params: Any, states: GameState) -> tuple[jax.Array, jax.Array]:
        del params
        x = board_arrays(states)
        legal = states.legal_action_mask
        diff = material_diff(x.board)
        if mobility:
            mine = jnp.sum(legal, axis=-1).astype(jnp.float32)
            theirs = jax.vmap(_opponent_mobility)(x).astype(jnp.float32)
            diff = diff + mobility * (mine - theirs)
        value = jnp.tanh(scale * diff)
        if capture_prior:
            logits = capture_prior * capture_values(x.board, x.en_passant)
        else:
            logits = jnp.zeros(legal.shape, jnp.float32)
        return jnp.where(legal, logits, jnp.finfo(jnp.float32).min), value.astype(jnp.float32)

    _EVALUATORS[key] = evaluate
    return evaluate


def adjudicate_by_material(
    final_states: GameState, length: np.ndarray, terminated: np.ndarray, outcomes: np.ndarray, threshold: float
) -> np.ndarray:
    """float [N]: first-mover outcomes with unfinished games scored by material.

    Games cut by a move cap (`terminated` False) where the first mover (White from the standard or
    an odds start) is ahead by at least `threshold` pawns count as its win (+1), behind by at
    least `threshold` as its loss (-1); the rest stay as `outcomes` (draws). Finished games keep
    their real result.

    Args:
      final_states: GameState [N] after each game's moves (`selfplay_stats.replay_moves`, or the
        loop's own final states).
      length: int [N] plies played (the first mover is to move at the end iff the length is even).
      terminated: bool [N].
      outcomes: float [N] from the first mover's view.
      threshold: pawns (e.g. 3: a minor piece).
    """
    mover = np.asarray(material_result(jnp.asarray(board_arrays(final_states).board), threshold), np.float64)
    first_to_move = np.asarray(length) % 2 == 0
    judged = np.where(first_to_move, mover, -mover)
    return np.where(np.asarray(terminated, bool), np.asarray(outcomes, np.float64), judged)
