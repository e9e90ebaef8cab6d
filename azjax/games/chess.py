"""Chess (azjax's rules on pgx's state and API: `azjax.games.chess_rules`) from the standard start, a named odds start
or any FEN, with optional material adjudication of self-play games; UCI moves (`e2e4`, `e7e8q`) as its notation."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import chess_rules
from azjax.games.base import Game, GameState

Array = jax.Array

STANDARD_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
# Odds starts: the side giving odds (White) lacks the piece; conventional squares (queen d1, rook a1,
# knight b1; the lost rook also loses its castling right).
ODDS_FENS = {
    "standard": STANDARD_FEN,
    "queen_odds": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR w KQkq - 0 1",
    "rook_odds": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/1NBQKBNR w Kkq - 0 1",
    "knight_odds": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/R1BQKBNR w KQkq - 0 1",
}
MAX_LEGAL_MOVES = chess_rules.MAX_LEGAL_MOVES  # 218 is the most legal moves of any chess position
MOVE_PLANES = 73  # pgx's (and AlphaZero's) move planes: 56 queen-like, 8 knight, 9 underpromotion moves a square
# P, N, B, R, Q, K (index = pgx piece code; 0 = empty). The king has no material value.
PIECE_VALUES = (0.0, 1.0, 3.0, 3.0, 5.0, 9.0, 0.0)


def material_diff(board: Array) -> Array:
    """float32 [...]: the mover's material minus the opponent's, in pawns; `board` int [..., 64] (pgx keeps it from
    the mover's side: the mover's pieces positive)."""
    values = jnp.asarray(PIECE_VALUES, jnp.float32)
    return jnp.sum(values[jnp.abs(board)] * jnp.sign(board), axis=-1)


ADJUDICATE_RESULTS = ("margin", "proportional")


def material_result(board: Array, margin: float, result: str = "margin") -> Array:
    """float32 [...]: the mover's result by material; `board` int [..., 64] from the mover's side.

    "margin": +1 ahead by `margin` pawns or more, -1 behind by as much, else 0 (a draw).
    "proportional": the lead in units of `margin`, clipped to [-1, 1] (a lead of margin / 3 pawns scores 1/3), so
    a small edge is a small win and not the draw that drowns it.
    """
    diff = material_diff(board)
    if result == "proportional":
        return jnp.clip(diff / margin, -1.0, 1.0).astype(jnp.float32)
    return jnp.where(diff >= margin, 1.0, jnp.where(diff <= -margin, -1.0, 0.0)).astype(jnp.float32)


# pgx's observation planes [8, 8, 119]: 8 positions x 14 planes (own pieces, opponent's pieces, two repetition
# flags), then colour, ply count step_count / 512, four castling rights, fifty-move count halfmove_count / 100.
# All but the two counts are 0/1.
PLY_PLANE, HALFMOVE_PLANE = 113, 118
PLY_SCALE, HALFMOVE_SCALE = 512, 100.0  # pgx's MAX_TERMINATION_STEPS, and its divisor of the halfmove count


class PackedObservation(NamedTuple):
    """Chess observations as the replay keeps them ([...] leading axes): 1 byte a 0/1 plane and the two counts as
    integers, 7.5 KB a position instead of pgx's 30 KB of float32 planes.

    planes: uint8 [..., 8, 8, 117], the 0/1 planes in pgx's order without the two count planes.
    ply: int16 [...], pgx's step_count (plane 113 times 512). halfmove: int16 [...], its halfmove_count (plane 118
    times 100).
    """

    planes: Array
    ply: Array
    halfmove: Array


def pack_observation(obs: Array) -> PackedObservation:
    """pgx chess observations [..., 8, 8, 119] float32 -> `PackedObservation`. The count planes are constant over
    the board; rounding recovers the integer count exactly (k / 512 is exact, h / 100 is within half an ulp)."""
    planes = jnp.concatenate([obs[..., :PLY_PLANE], obs[..., PLY_PLANE + 1:HALFMOVE_PLANE]], axis=-1)
    ply = jnp.round(obs[..., 0, 0, PLY_PLANE] * PLY_SCALE)
    halfmove = jnp.round(obs[..., 0, 0, HALFMOVE_PLANE] * HALFMOVE_SCALE)
    return PackedObservation(planes.astype(jnp.uint8), ply.astype(jnp.int16), halfmove.astype(jnp.int16))


def unpack_observation(packed: PackedObservation) -> Array:
    """float32 [..., 8, 8, 119]: the observations `pack_observation` packed, bit for bit. The counts are divided by
    pgx's own expressions (`Game.observe` in pgx/_src/games/chess.py): XLA turns h / 100 into h * (1 / 100) there
    and here alike, which differs from the IEEE quotient by an ulp for about a quarter of the counts."""
    planes = packed.planes.astype(jnp.float32)
    shape = (*planes.shape[:-1], 1)
    ply = jnp.broadcast_to((packed.ply.astype(jnp.int32) / PLY_SCALE)[..., None, None, None], shape)
    halfmove = jnp.broadcast_to((packed.halfmove.astype(jnp.float32) / HALFMOVE_SCALE)[..., None, None, None], shape)
    return jnp.concatenate([planes[..., :PLY_PLANE], ply, planes[..., PLY_PLANE:HALFMOVE_PLANE - 1], halfmove],
                           axis=-1)


@functools.cache
def _policy_index() -> np.ndarray:
    """int32 [64 * 73]: each pgx move's flat index into [8, 8, 73] move planes laid out as the observation."""
    move = np.arange(64 * MOVE_PLANES)
    square, plane = move // MOVE_PLANES, move % MOVE_PLANES
    row, column = 7 - square % 8, square // 8
    return ((row * 8 + column) * MOVE_PLANES + plane).astype(np.int32)


def check_fen(fen: str) -> str:
    """The FEN as python-chess writes it; raises ValueError naming the problem if it is not a legal position."""
    import chess as pychess

    try:
        board = pychess.Board(fen)
    except ValueError as e:
        raise ValueError(f"bad FEN {fen!r}: {e}") from e
    status = board.status()
    if status != pychess.STATUS_VALID:
        raise ValueError(f"bad FEN {fen!r}: not a legal chess position ({status!r})")
    return board.fen()


def chess_state_from_fen(fen: str) -> Any:
    """A chess state (`chess_rules.ChessState`) for a FEN, no history behind it; raises ValueError naming the problem
    if the FEN is not legal."""
    return chess_rules.from_fen(check_fen(fen))


@dataclasses.dataclass(frozen=True)
class Chess(Game):
    """Chess from the standard start, a named odds start, or any FEN."""

    start_fen: str = STANDARD_FEN
    # Self-play adjudication (off = 0: a game runs to chess's own end, drawn after 512 plies). A game still running
    # after `adjudicate_plies` plies ends there, won by the side `adjudicate_margin` pawns or more ahead in material,
    # else drawn. From scratch most self-play games are drawn and teach the value nothing; material is the signal
    # a young network can learn first (the cutechess/TCEC practice, applied to self-play).
    adjudicate_plies: int = 0
    adjudicate_margin: float = 3.0
    adjudicate_result: str = "margin"  # or "proportional" (`material_result`)
    adjudicate_scale: float = 1.0  # the adjudicated result times this: below 1 a lead is worth less than a mate
    has_fen: ClassVar[bool] = True
    notation_reads_position: ClassVar[bool] = True  # the mover's side and pawn promotions
    record_format: ClassVar[str] = "pgn"
    # A position's legal moves fit in MAX_LEGAL_MOVES of the 4672 actions: a search tree keeps that many children a
    # node, and the replay that many (action, probability) pairs a policy target.
    search_width: ClassVar[int | None] = MAX_LEGAL_MOVES
    policy_width: ClassVar[int | None] = MAX_LEGAL_MOVES

    def cut_short(self, state: GameState) -> Array:
        """bool []: the game ended at the rules' ply cap (`ChessEnv.max_plies`: pgx's 512 in self-play, the play
        cap `CHESS_PLAY_PLIES` in arenas and engines), not by chess's own rules. One unbatched state."""
        cap = self.env.max_plies
        if cap is None:
            return jnp.zeros_like(state.terminated)
        x = state.env._x
        return (state.terminated & (x.step_count >= cap)
                & ~chess_rules.ended_by_rules(x, state.env.legal_actions))

    def legal_actions(self, state: GameState) -> Array:
        """int32 [..., MAX_LEGAL_MOVES]: the legal moves in increasing order, -1 after the last, as the rules keep
        them (a finished game keeps its last position's; stepping it does nothing, whatever the action)."""
        return state.env.legal_actions.astype(jnp.int32)

    @property
    def is_chess(self) -> bool:
        return True

    def pack_observation(self, obs: Array) -> PackedObservation:
        return pack_observation(obs)

    def unpack_observation(self, packed: PackedObservation) -> Array:
        return unpack_observation(packed)

    def policy_layout(self) -> tuple[int, np.ndarray]:
        """AlphaZero's 73 move planes at each from-square. pgx's move a is from-square a // 73 (file * 8 + rank,
        from the mover's side) and plane a % 73; its observation shows rank 7 - r in row r and file c in column c,
        so move a reads row 7 - rank, column file, plane a % 73."""
        return MOVE_PLANES, _policy_index()

    def init(self, key: Array, komi: Array | float | None = None) -> GameState:
        del komi
        if self.start_fen == STANDARD_FEN:
            env = self.env.init(key)
        else:
            env = _cached_fen_state(self.start_fen)
        return GameState(env=env, komi=jnp.float32(0.0))

    def step(self, state: GameState, action: Array) -> GameState:
        env = self.env.step(state.env, action)
        if self.adjudicate_plies:
            at_cap = ~env.terminated & (env._step_count >= self.adjudicate_plies)
            mover_result = material_result(env._x.board, self.adjudicate_margin, self.adjudicate_result)
            if self.adjudicate_scale != 1.0:  # off: the same program as before the switch
                mover_result = mover_result * self.adjudicate_scale
            rewards = jnp.where(jnp.arange(2) == env.current_player, mover_result, -mover_result)  # by player id
            # A finished game's legal_action_mask is all True (pgx's convention), derived from `terminated`.
            env = env.replace(terminated=env.terminated | at_cap, rewards=jnp.where(at_cap, rewards, env.rewards))
        return state.replace(env=env)

    def draw_repetition(self, state: GameState) -> GameState:
        """Ends the game as a draw where the position (pgx's Zobrist hash: pieces, mover, castling, en passant)
        occurred before in its history, a finished game as it is. One unbatched state."""
        env = state.env
        # [HASH_WINDOW, 2], the current position's hash first, zeros before the game began: every position since the
        # last capture or pawn move, the only ones that can recur.
        hashes = env._x.hash_history
        repeated = (hashes[1:] == hashes[0]).all(axis=-1).any()
        draw = ~env.terminated & repeated
        # A finished game's legal_action_mask is all True (pgx's convention), derived from `terminated`.
        env = env.replace(terminated=env.terminated | draw, rewards=jnp.where(draw, 0.0, env.rewards))
        return state.replace(env=env)

    def start_position(self, komi: float = 0.0, fen: str | None = None) -> GameState:
        if fen is not None and fen != STANDARD_FEN:
            return GameState(env=chess_state_from_fen(fen), komi=jnp.float32(0.0))
        return self.init(jax.random.key(0))

    def side_to_move(self, state: GameState, num_moves: int) -> str:
        return "w" if int(np.asarray(state.env._x.color)) == 0 else "b"

    def fen(self, state: GameState) -> str:
        return chess_rules.to_fen(state.env)

    def render(self, state: GameState) -> str:
        import chess as pychess

        return str(pychess.Board(self.fen(state)))

    def action_to_str(self, state: GameState, action: int) -> str:
        x = state.env._x
        return chess_rules.action_to_uci(int(action), np.asarray(x.board), int(np.asarray(x.color)))

    def parse_action(self, state: GameState, text: str) -> int:
        t = text.strip().lower()
        actions = np.asarray(state.env.legal_actions)
        for a in actions[actions >= 0]:
            if self.action_to_str(state, int(a)) == t:
                return int(a)
        if len(t) in (4, 5) and t[0] in "abcdefgh" and t[2] in "abcdefgh" and t[1] in "12345678" and t[3] in "12345678":
            raise ValueError(f"illegal move: {text!r}")
        raise ValueError(f"not a UCI move (e.g. e2e4, e7e8q): {text!r}")


_FEN_CACHE: dict[str, Any] = {}


def _cached_fen_state(fen: str) -> Any:
    if fen not in _FEN_CACHE:
        # Eager even when the first `init` is traced (inside jit/vmap): the cache must hold concrete arrays.
        with jax.ensure_compile_time_eval():
            _FEN_CACHE[fen] = jax.tree.map(np.asarray, chess_state_from_fen(fen))
    return jax.tree.map(jnp.asarray, _FEN_CACHE[fen])
