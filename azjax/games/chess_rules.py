"""azjax's chess rules on pgx's chess state and API: pgx's moves, observations and rewards wherever pgx is right,
each position's legal moves computed once, vectorised, without pgx's cap, and a smaller state.

What changes from pgx's chess (`pgx.chess`, `pgx._src.games.chess`):
  * legal moves: pgx lists ~432 candidate moves, keeps 200 of them (`jnp.nonzero(..., size=200)`: positions with
    more legal moves lose some) and plays each one to test whether its own king is then attacked. Here the
    [64 squares, 73 planes] legality follows at once in AlphaZero's move-plane encoding from a few boards computed
    once per position: the first piece along each of the 8 rays from every square (by doubling: 4 shifted slices
    per direction), the checkers and the squares that block them, the pinned pieces (a piece whose first piece one
    way is its king and the other way an enemy slider of that line) and the squares the opponent attacks with the
    king taken off the board. Only en passant, whose capture can uncover a check along the rank, is played out
    (at most 2 moves, rays gathered from the king). The state keeps the legal moves as a sorted list
    (`legal_actions`, `MAX_LEGAL_MOVES` wide, -1 padded) and as 73 bitboards (`legal_bits`, 584 bytes), which
    `legal_action_mask` unpacks (XLA's CPU backend scatters slowly).
  * the observation (119 planes, 30 KB) is a property computed from the state, not stored: a search tree that
    keeps a state per node keeps ~2.6 KB, not ~46 KB.
  * repetitions: pgx stores the start position's hash as a constant (`INIT_ZOBRIST_HASH`) that its Zobrist tables
    no longer give, so the start position reached a third time does not end the game, and its FEN starts invent a
    history (the standard start behind the FEN position). Here every hash comes from the tables (pgx's own, so the
    other positions hash as in pgx) and a FEN start has zeros behind it, as pgx's standard start has.
  * the hash window: pgx keeps 513 hashes. A position can recur only while no capture or pawn move happened, that
    is within `halfmove_count` plies; the game ends at 100. The observation asks how often each of the last 8
    positions occurs: position i (i <= 7 plies ago, halfmove count <= 99 while the game went on) can only equal
    positions 0 .. i + 99, so `HASH_WINDOW` = 7 + 99 + 1 = 107 hashes give pgx's repetition planes and its
    threefold rule exactly (hash collisions aside, as in pgx).
  * the ply cap: pgx ends every game at 512 plies; here `max_plies` (default 512; None: no cap, chess's own rules,
    which the fifty-move rule ends). The observation's step plane stays pgx's step_count / 512.

Conventions are pgx's: squares are file * 8 + rank (a1 = 0, a2 = 1, ..., h8 = 63); the board is kept from the
mover's side (the mover's pieces positive, moving up the ranks); action = from_square * 73 + plane.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pgx.core
from flax import struct
from jax import Array, lax

EMPTY, PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = range(7)  # the opponent's pieces are negative
WALL = 7  # off the board, in the "first piece along a ray" boards
NUM_ACTIONS = 64 * 73
MAX_LEGAL_MOVES = 256  # a chess position has at most 218 legal moves
HISTORY = 8  # positions the observation shows
HASH_WINDOW = HISTORY - 1 + 99 + 1  # 107: see the module docstring
PGX_MAX_PLIES = 512  # pgx's (and AlphaZero's) ply cap; also the observation's step-plane scale
STANDARD_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

# The 8 ray directions as (file step, rank step), in pgx's plane order: planes 9 + 7 d .. 15 + 7 d move along
# direction d. pgx lists directions 0, 2, 4, 6 from distance 7 down to 1, the others from 1 up to 7.
DIRECTIONS = ((0, -1), (0, 1), (-1, 0), (1, 0), (-1, -1), (1, 1), (-1, 1), (1, -1))
_REVERSED = (True, False, True, False, True, False, True, False)
# Knight planes 65..72 as (file step, rank step).
KNIGHT_STEPS = ((-2, -1), (-2, 1), (-1, -2), (-1, 2), (2, -1), (2, 1), (1, -2), (1, 2))
# Underpromotion planes 0..8: piece (plane // 3: rook, bishop, knight), file step (plane % 3: 0, +1, -1).
UNDERPROMOTION_PIECES = (ROOK, BISHOP, KNIGHT)
_UNDERPROMOTION_FILE_STEPS = (0, 1, -1)


def _plane_steps() -> np.ndarray:
    """int [73, 2]: each plane's (file step, rank step) for a move from a square (underpromotions: one rank up)."""
    steps = [(df, 1) for df in _UNDERPROMOTION_FILE_STEPS] * 3
    for d, (df, dr) in enumerate(DIRECTIONS):
        distances = range(7, 0, -1) if _REVERSED[d] else range(1, 8)
        steps += [(df * k, dr * k) for k in distances]
    steps += list(KNIGHT_STEPS)
    return np.array(steps, np.int32)


def _to_square_table() -> np.ndarray:
    """int32 [64, 73]: the square each (from square, plane) moves to; -1 off the board (and underpromotions from
    any rank but the 7th)."""
    steps = _plane_steps()
    table = -np.ones((64, 73), np.int32)
    for square in range(64):
        file, rank = divmod(square, 8)
        for plane, (df, dr) in enumerate(steps):
            f, r = file + df, rank + dr
            if 0 <= f < 8 and 0 <= r < 8 and (plane >= 9 or rank == 6):
                table[square, plane] = f * 8 + r
    return table


TO_SQUARE = _to_square_table()


def _king_rays() -> np.ndarray:
    """int32 [64, 8, 7]: the squares along each direction from each square, nearest first; 64 past the edge."""
    rays = np.full((64, 8, 7), 64, np.int32)
    for square in range(64):
        file, rank = divmod(square, 8)
        for d, (df, dr) in enumerate(DIRECTIONS):
            for k in range(1, 8):
                f, r = file + df * k, rank + dr * k
                if 0 <= f < 8 and 0 <= r < 8:
                    rays[square, d, k - 1] = f * 8 + r
    return rays


_RAYS = _king_rays()
# Squares whose file and rank have the same parity (a1's colour); pgx's insufficient-material rule counts bishops
# on them.
_A1_COLOUR = np.array([(s // 8) % 2 == (s % 8) % 2 for s in range(64)])


@functools.cache
def _zobrist() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """pgx's Zobrist tables (board [64, 13, 2], side [2], castling [4, 2], en passant [65, 2]; uint32): positions
    other than the start hash as in pgx."""
    from pgx._src.games import chess as pgx_chess

    return tuple(np.asarray(t) for t in (pgx_chess.ZOBRIST_BOARD, pgx_chess.ZOBRIST_SIDE,  # type: ignore[return-value]
                                         pgx_chess.ZOBRIST_CASTLING, pgx_chess.ZOBRIST_EN_PASSANT))


class BoardState(NamedTuple):
    """One position and its history, pgx's `GameState` field names where they mean the same.

    Attributes:
      color: int32 []: the side to move, 0 White, 1 Black.
      board: int8 [64]: pgx's piece codes from the mover's side (mover positive, moving up the ranks).
      castling_rights: bool [2, 2]: (mover, opponent) x (queen side, king side).
      en_passant: int32 []: the square behind a pawn that just made a double step (mover's side), else -1.
      halfmove_count: int32 []: plies since the last capture or pawn move.
      fullmove_count: int32 []: FEN's move number.
      step_count: int32 []: plies played since the start position.
      board_history: int8 [8, 64]: the last 8 boards, current first, all from the mover's side; zeros before the
        start.
      hash_history: uint32 [HASH_WINDOW, 2]: the Zobrist hashes of the last `HASH_WINDOW` positions, current first;
        zeros before the start.
    """

    color: Array
    board: Array
    castling_rights: Array
    en_passant: Array
    halfmove_count: Array
    fullmove_count: Array
    step_count: Array
    board_history: Array
    hash_history: Array


@struct.dataclass
class ChessState:
    """pgx's chess `State` fields, with the legal moves as a sorted list and the observation computed on demand.
    Unbatched shapes below; batched states gain leading axes on every leaf (the properties follow them).

    Attributes:
      current_player: int32 []: the player id to move.
      rewards: float32 [2]: each player id's reward for the last move.
      terminated: bool []: the game is over.
      truncated: bool []: always False (pgx's field).
      legal_actions: int16 [MAX_LEGAL_MOVES]: the legal actions in increasing order, -1 after them. A finished
        game keeps its last position's (a mate's or stalemate's: none); its `legal_action_mask` is pgx's all-True.
      legal_bits: uint8 [73, 8]: the same moves as bitboards (plane, file; bit r: rank r), which
        `legal_action_mask` unpacks with dense shifts (scattering `legal_actions` costs ~5x the whole step on
        XLA's CPU backend).
      _step_count: int32 []: plies played (pgx's).
      _player_order: int32 [2]: the player id of White and of Black.
      _x: `BoardState`.
    """

    current_player: Array
    rewards: Array
    terminated: Array
    truncated: Array
    legal_actions: Array
    legal_bits: Array
    _step_count: Array
    _player_order: Array
    _x: BoardState

    @property
    def env_id(self) -> str:
        return "chess"

    @property
    def legal_action_mask(self) -> Array:
        """bool [..., 4672]: the legal moves (`legal_bits` unpacked); all True in a finished game (pgx's
        convention)."""
        return unpack_moves(self.legal_bits) | self.terminated[..., None]

    @property
    def observation(self) -> Array:
        """float32 [..., 8, 8, 119]: pgx's observation of the position for the player to move."""
        lead = self._x.board.shape[:-1]
        flat = jax.tree.map(lambda a: a.reshape(-1, *a.shape[len(lead):]), self._x)
        return jax.vmap(observe)(flat).reshape(*lead, 8, 8, 119)


# ---------------------------------------------------------------- legal moves: bitboards, batch last
#
# The move generator works on bitboards uint8 [8 files, N]: bit r of byte f is square (f, r), so a rank step is a
# bit shift (bits leaving the byte leave the board) and a file step a static slice of whole rows. With the batch
# last every operation is a dense one over N bytes, which XLA's CPU backend vectorises; `legal_actions` switches
# to this layout under vmap (`custom_vmap`).

_FULL = 0xFF


def _sh(x: Array, df: int, dr: int) -> Array:
    """uint8 [8, ...]: every set square of `x` moved by (df files, dr ranks); squares leaving the board drop."""
    y = lax.pad(x, jnp.uint8(0), [(df, -df, 0)] + [(0, 0, 0)] * (x.ndim - 1)) if df else x
    if dr > 0:
        y = y << jnp.uint8(dr)
    elif dr < 0:
        y = y >> jnp.uint8(-dr)
    return y


def _back(x: Array, df: int, dr: int) -> Array:
    """uint8 [8, ...]: the squares s whose square s + (df, dr) is set in `x`."""
    return _sh(x, -df, -dr)


def _ray(start: Array, empty: Array, df: int, dr: int) -> Array:
    """uint8 [8, ...]: the squares reached from `start` along (df, dr) through `empty` squares, the first blocker
    included (a slider's attacks). Kogge-Stone fill: 3 doublings."""
    g, p = start, empty
    g = g | (p & _sh(g, df, dr))
    p = p & _sh(p, df, dr)
    g = g | (p & _sh(g, 2 * df, 2 * dr))
    p = p & _sh(p, 2 * df, 2 * dr)
    g = g | (p & _sh(g, 4 * df, 4 * dr))
    return _sh(g, df, dr)


def _any(x: Array) -> Array:
    """bool [N]: some square of bitboards [8, N] is set."""
    return (x != 0).any(axis=0)


def _count(x: Array) -> Array:
    """int32 [N]: the set squares of bitboards [8, N]."""
    return lax.population_count(x).astype(jnp.int32).sum(axis=0)


def _move_bitboards(board: Array, castling_rights: Array, en_passant: Array) -> tuple[Array, Array]:
    """The legal moves of N positions: uint8 [73, 8, N] a bitboard of from-squares per plane (pgx's plane order),
    and bool [N]: the mover is in check.

    board: int8 [8, 8, N] (file, rank, batch) from the mover's side; castling_rights: bool [2, 2, N];
    en_passant: int32 [N].
    """
    weights = (jnp.uint8(1) << jnp.arange(8, dtype=jnp.uint8))[None, :, None]

    def bb(mask: Array) -> Array:
        return jnp.sum(jnp.where(mask, weights, jnp.uint8(0)), axis=1, dtype=jnp.uint8)

    own, opp = bb(board > 0), bb(board < 0)
    empty = ~(own | opp)
    pawn, knight, bishop, rook, queen, king = (bb(board == p) for p in range(1, 7))
    their_pawn, their_knight, their_bishop, their_rook, their_queen, their_king = (bb(board == -p)
                                                                                   for p in range(1, 7))
    sliders = [their_rook | their_queen] * 4 + [their_bishop | their_queen] * 4  # by direction

    # Checkers, the squares that block (or capture) a single checker, and pins: from the king along each ray.
    num_checks = jnp.zeros(board.shape[2:], jnp.int32)
    block = jnp.zeros_like(own)
    pin_axis = [jnp.zeros_like(own)] * 4  # axis a: directions 2a, 2a + 1
    for d, (df, dr) in enumerate(DIRECTIONS):
        ray = _ray(king, empty, df, dr)
        checked = _any(ray & sliders[d])
        num_checks += checked
        block |= jnp.where(checked, ray, jnp.uint8(0))
        mine = ray & own  # the first piece, if it is the mover's
        beyond = _ray(king, empty | mine, df, dr) & ~ray
        pin_axis[d // 2] |= jnp.where(_any(beyond & sliders[d]), mine, jnp.uint8(0))
    knight_checkers = functools.reduce(jnp.bitwise_or, [_sh(king, df, dr) for df, dr in KNIGHT_STEPS]) & their_knight
    pawn_checkers = (_sh(king, 1, 1) | _sh(king, -1, 1)) & their_pawn
    num_checks += _count(knight_checkers) + _count(pawn_checkers)
    block |= knight_checkers | pawn_checkers
    target_ok = jnp.where(num_checks == 0, jnp.uint8(_FULL), jnp.where(num_checks == 1, block, jnp.uint8(0)))
    pinned = pin_axis[0] | pin_axis[1] | pin_axis[2] | pin_axis[3]
    free = [~pinned | pin_axis[d // 2] for d in range(8)]  # pieces that may move along direction d

    # What the opponent attacks with the king off the board (a king stepping back along a slider's line stays
    # in check).
    attacked = jnp.zeros_like(own)
    for d, (df, dr) in enumerate(DIRECTIONS):
        attacked |= _ray(sliders[d], empty | king, df, dr) | _sh(their_king, df, dr)
    for df, dr in KNIGHT_STEPS:
        attacked |= _sh(their_knight, df, dr)
    attacked |= _sh(their_pawn, 1, -1) | _sh(their_pawn, -1, -1)

    # Queen-like planes: sliders up to their first piece (an enemy's taken), the king one step to a safe square.
    land = ~own & target_ok
    moves: list[list[Array]] = []
    for d, (df, dr) in enumerate(DIRECTIONS):
        reach = (rook | queen if d < 4 else bishop | queen) & free[d]
        along = []
        for k in range(1, 8):
            along.append(reach & _back(land, k * df, k * dr))
            if k < 7:
                reach = reach & _back(empty, k * df, k * dr)
        along[0] |= king & _back(~own & ~attacked, df, dr)
        moves.append(along)

    # Pawns: pushes (one or two squares), captures.
    push = pawn & _back(empty, 0, 1) & free[1]
    push2 = push & jnp.uint8(1 << 1) & _back(empty & target_ok, 0, 2)
    push &= _back(target_ok, 0, 1)
    take_right = pawn & _back(opp & target_ok, 1, 1) & free[5]  # direction 5: (1, 1)
    take_left = pawn & _back(opp & target_ok, -1, 1) & free[6]  # direction 6: (-1, 1)
    moves[1][0] |= push
    moves[1][1] |= push2

    # En passant: play the (at most 2) captures out and look along the rays from the king (taking the pawn that
    # just made a double step may uncover a check that the pins do not see, along its diagonal or the rank).
    files = jnp.arange(8)[:, None]
    target = jnp.where((en_passant >= 0) & (files == en_passant // 8),
                       jnp.left_shift(1, en_passant % 8), 0).astype(jnp.uint8)
    taken = _sh(target, 0, -1) & their_pawn
    for df, d in ((1, 5), (-1, 6)):  # from the left of the target (moving up-right), from its right (up-left)
        start = _back(target, df, 1) & pawn & jnp.where(_any(taken), jnp.uint8(_FULL), jnp.uint8(0))
        empty_after = (empty | start | taken) & ~target
        exposed = _any(knight_checkers) | _any(pawn_checkers & ~taken)
        for d2, (df2, dr2) in enumerate(DIRECTIONS):
            exposed |= _any(_ray(king, empty_after, df2, dr2) & sliders[d2])
        moves[d][0] |= jnp.where(exposed, jnp.uint8(0), start)
    moves[5][0] |= take_right
    moves[6][0] |= take_left

    # Castling: rights, rook and king in place, empty squares between, king not in check and not passing or
    # landing on an attacked square (first-rank squares are bit 0 of each file).
    def on_first_rank(x: Array, file: int) -> Array:
        return (x[file] & 1) != 0

    safe = [~on_first_rank(attacked, f) for f in range(8)]
    queen_side = (castling_rights[0, 0] & on_first_rank(rook, 0) & on_first_rank(empty, 1)
                  & on_first_rank(empty, 2) & on_first_rank(empty, 3) & on_first_rank(king, 4)
                  & safe[2] & safe[3] & safe[4])
    king_side = (castling_rights[0, 1] & on_first_rank(king, 4) & on_first_rank(empty, 5)
                 & on_first_rank(empty, 6) & on_first_rank(rook, 7) & safe[4] & safe[5] & safe[6])
    e1 = jnp.asarray(np.array([0, 0, 0, 0, 1, 0, 0, 0], np.uint8))[:, None]
    moves[2][1] |= jnp.where(queen_side, e1, jnp.uint8(0))  # direction 2 (file -1), distance 2
    moves[3][1] |= jnp.where(king_side, e1, jnp.uint8(0))

    seventh = jnp.uint8(1 << 6)
    planes = [push & seventh, take_right & seventh, take_left & seventh] * 3
    for d in range(8):
        planes += moves[d][::-1] if _REVERSED[d] else moves[d]
    planes += [knight & ~pinned & _back(land, df, dr) for df, dr in KNIGHT_STEPS]
    return jnp.stack(planes), num_checks > 0


def _list_moves(planes: Array) -> Array:
    """uint8 [73, 8] (one position's plane bitboards) -> int16 [MAX_LEGAL_MOVES]: the legal actions in increasing
    order, -1 after them.

    No scatter (slow on XLA's CPU backend): the squares with moves (at most 16: the mover's pieces) are ranked,
    each one's 73 planes packed into 3 words, and each list slot finds its piece by comparing with the running
    counts and its plane by a popcount binary search in that piece's words.
    """
    squares_with_moves = lax.reduce(planes, jnp.uint8(0), lax.bitwise_or, (0,))  # [8]
    has = ((squares_with_moves[:, None] >> jnp.arange(8, dtype=jnp.uint8)[None, :]) & 1).reshape(64)
    running = jnp.cumsum(has.astype(jnp.int32))
    square = (running[None, :] <= jnp.arange(16)[:, None]).sum(1)  # [16]: the i-th such square, 64 past the last
    file, rank = jnp.minimum(square // 8, 7), (square % 8).astype(jnp.uint8)
    bits = ((planes.T[file] >> rank[:, None]) & 1).astype(jnp.uint32) * (square < 64)[:, None]  # [16, 73]
    bits = jnp.pad(bits, ((0, 0), (0, 96 - 73))).reshape(16, 3, 32)
    words = jnp.sum(bits << jnp.arange(32, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)  # [16, 3]
    counts = lax.population_count(words).astype(jnp.int32).sum(-1)
    ends = jnp.cumsum(counts)
    slot = jnp.arange(MAX_LEGAL_MOVES)
    piece = (ends[None, :] <= slot[:, None]).sum(1)  # [256]: 16 past the last move
    clipped = jnp.minimum(piece, 15)
    k = slot - (ends - counts)[clipped]
    w = words[clipped]  # [256, 3]
    low0, low1 = (lax.population_count(w[:, i]).astype(jnp.int32) for i in range(2))
    which = (k >= low0).astype(jnp.int32) + (k >= low0 + low1)
    k = k - jnp.where(which >= 1, low0, 0) - jnp.where(which >= 2, low1, 0)
    word = jnp.where(which == 0, w[:, 0], jnp.where(which == 1, w[:, 1], w[:, 2]))
    position = 32 * which
    for width in (16, 8, 4, 2, 1):
        low = lax.population_count(word & jnp.uint32((1 << width) - 1)).astype(jnp.int32)
        up = k >= low
        k = jnp.where(up, k - low, k)
        word = jnp.where(up, word >> jnp.uint32(width), word)
        position = position + jnp.where(up, width, 0)
    return jnp.where(piece < 16, square[clipped] * 73 + position, -1).astype(jnp.int16)


def _legal_batch_last(board: Array, castling_rights: Array, en_passant: Array) -> tuple[Array, Array, Array]:
    """(int16 [N, MAX_LEGAL_MOVES] the legal actions in increasing order, -1 after them; uint8 [N, 73, 8] the same
    moves as bitboards of from-squares per plane; bool [N] in check).

    board: int [64, N] from the mover's side; castling_rights: bool [2, 2, N]; en_passant: int [N].
    """
    n = board.shape[-1]
    planes, in_check = _move_bitboards(board.astype(jnp.int8).reshape(8, 8, n), castling_rights,
                                       en_passant.astype(jnp.int32))
    planes = jnp.moveaxis(planes, -1, 0)
    return jax.vmap(_list_moves)(planes), planes, in_check


@jax.custom_batching.custom_vmap
def legal_actions(board: Array, castling_rights: Array, en_passant: Array) -> tuple[Array, Array, Array]:
    """The legal moves of one position: (int16 [MAX_LEGAL_MOVES] the legal actions in increasing order, -1 after
    them; uint8 [73, 8] the same as bitboards (`legal_bits`); bool [] the mover is in check). Under vmap the batch
    runs in one batch-last pass.

    board: int [64] from the mover's side; castling_rights: bool [2, 2]; en_passant: int [] (-1 if none).
    """
    actions, bits, in_check = _legal_batch_last(board[:, None], castling_rights[..., None],
                                                jnp.reshape(en_passant, (1,)))
    return actions[0], bits[0], in_check[0]


@legal_actions.def_vmap
def _legal_actions_vmap(axis_size: int, in_batched: Any, board: Array, castling_rights: Array,
                        en_passant: Array) -> tuple[tuple[Array, Array, Array], tuple[bool, bool, bool]]:
    board, castling_rights, en_passant = (a if batched else jnp.broadcast_to(a, (axis_size, *a.shape))
                                          for a, batched in zip((board, castling_rights, en_passant), in_batched,
                                                                strict=True))
    return _legal_batch_last(board.T, jnp.moveaxis(castling_rights, 0, -1), en_passant), (True, True, True)


def legal_moves(board: Array, castling_rights: Array, en_passant: Array) -> tuple[Array, Array]:
    """The legal moves of one position as pgx's mask: (bool [4672], bool [] the mover is in check)."""
    _, bits, in_check = legal_actions(board, castling_rights, en_passant)
    return unpack_moves(bits), in_check


def unpack_moves(bits: Array) -> Array:
    """uint8 [..., 73, 8] move bitboards -> bool [..., 4672] by action (from-square * 73 + plane). Dense shifts, no
    scatter (slow on XLA's CPU backend)."""
    unpacked = (bits[..., None] >> jnp.arange(8, dtype=jnp.uint8)) & 1  # [..., plane, file, rank]
    by_square = unpacked.reshape(*bits.shape[:-2], 73, 64)
    return jnp.swapaxes(by_square, -1, -2).reshape(*bits.shape[:-2], NUM_ACTIONS).astype(jnp.bool_)


# ---------------------------------------------------------------- hashing, game ends


def zobrist_hash(board: Array, color: Array, castling_rights: Array, en_passant: Array) -> Array:
    """uint32 [2]: pgx's Zobrist hash of a position (board int [64] from the mover's side, color int [],
    castling_rights bool [2, 2], en_passant int [])."""
    table_board, table_side, table_castling, table_ep = (jnp.asarray(t) for t in _zobrist())
    xor = functools.partial(lax.reduce, init_values=jnp.uint32(0), computation=lax.bitwise_xor, dimensions=(0,))
    h = jnp.where(color == 0, table_side, jnp.uint32(0))
    h ^= xor(table_board[jnp.arange(64), board.astype(jnp.int32) + 6])
    h ^= xor(jnp.where(castling_rights.reshape(4, 1), table_castling, jnp.uint32(0)))
    return h ^ table_ep[jnp.where(en_passant >= 0, en_passant, 64)]


def insufficient_material(board: Array) -> Array:
    """bool []: pgx's (OpenSpiel's) rule: kings alone, a king and one minor piece against a king, or kings and
    bishops all on squares of one colour. board: int [64]."""
    piece = jnp.abs(board.astype(jnp.int32))
    num_pieces = (piece != EMPTY).sum()
    heavy_or_pawn = ((piece >= ROOK) | (piece == PAWN)).sum() - 2  # the kings count as >= ROOK
    bishops = piece == BISHOP
    num_bishops = bishops.sum()
    on_a1_colour = (bishops & jnp.asarray(_A1_COLOUR)).sum()
    one_colour = (on_a1_colour == num_bishops) | (on_a1_colour == 0)
    return ((num_pieces <= 2) | ((num_pieces == 3) & (heavy_or_pawn == 0))
            | ((num_pieces == num_bishops + 2) & one_colour))


def observe(x: BoardState) -> Array:
    """float32 [8, 8, 119]: pgx's observation of one position for the player to move: for each of the last 8
    positions the mover's 6 and the opponent's 6 piece planes and 2 repetition planes (seen before: no / yes),
    then the colour, step_count / 512, 4 castling rights and halfmove_count / 100. Rows are ranks 8..1 from the
    mover's side, columns files a..h."""
    boards = jnp.flip(x.board_history.reshape(HISTORY, 8, 8).transpose(0, 2, 1), axis=1)  # [i, row, column]
    codes = jnp.array([1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6], jnp.int8)
    pieces = (boards[:, None] == codes[None, :, None, None]).astype(jnp.float32)  # [8, 12, 8, 8]
    recent = x.hash_history[:HISTORY]  # [8, 2]
    seen = (x.hash_history[None, :, :] == recent[:, None, :]).all(-1).sum(-1) - 1  # [8]
    seen = jnp.where((recent == 0).all(-1), 0, seen)
    ones = jnp.ones((HISTORY, 1, 8, 8), jnp.float32)
    repeats = jnp.concatenate([ones * (seen == 0)[:, None, None, None], ones * (seen >= 1)[:, None, None, None]], 1)
    history = jnp.concatenate([pieces, repeats], axis=1).reshape(HISTORY * 14, 8, 8)
    scalars = jnp.concatenate([
        x.color.astype(jnp.float32)[None],
        (x.step_count.astype(jnp.float32) / PGX_MAX_PLIES)[None],
        x.castling_rights.reshape(4).astype(jnp.float32),
        (x.halfmove_count.astype(jnp.float32) / 100.0)[None],
    ])
    planes = jnp.concatenate([history, jnp.broadcast_to(scalars[:, None, None], (7, 8, 8))])
    return planes.transpose(1, 2, 0)


# ---------------------------------------------------------------- playing a move


def _flip_board(board: Array) -> Array:
    """int [..., 64] -> the other side's view: ranks reversed, colours swapped."""
    return -jnp.flip(board.reshape(*board.shape[:-1], 8, 8), axis=-1).reshape(board.shape)


def play_move(x: BoardState, action: Array) -> BoardState:
    """The position after `action` (int []), seen by the new mover, with its history and hash."""
    action = action.astype(jnp.int32)
    start, plane = action // 73, action % 73
    to = jnp.asarray(TO_SQUARE).reshape(-1)[action]
    squares = jnp.arange(64)
    board = x.board
    piece = jnp.sum(jnp.where(squares == start, board, 0).astype(jnp.int32))
    is_pawn = piece == PAWN
    captured = jnp.sum(jnp.where(squares == to, board, 0).astype(jnp.int32)) < 0
    en_passant_capture = is_pawn & (to == x.en_passant) & (x.en_passant >= 0)
    queen_side = (piece == KING) & (start == 32) & (to == 16)
    king_side = (piece == KING) & (start == 32) & (to == 48)
    promoted = jnp.where(plane < 9, jnp.asarray(UNDERPROMOTION_PIECES, jnp.int32)[jnp.minimum(plane // 3, 2)],
                         jnp.where(is_pawn & (start % 8 == 6), QUEEN, piece))
    board = jnp.where((squares == start) | (en_passant_capture & (squares == to - 1))
                      | (queen_side & (squares == 0)) | (king_side & (squares == 56)), EMPTY, board)
    board = jnp.where((queen_side & (squares == 24)) | (king_side & (squares == 40)), ROOK, board)
    board = jnp.where(squares == to, promoted, board).astype(x.board.dtype)
    keep = jnp.stack([jnp.stack([(start != 32) & (start != 0), (start != 32) & (start != 56)]),
                      jnp.stack([to != 7, to != 63])])
    en_passant = jnp.where(is_pawn & (jnp.abs(to - start) == 2), (to + start) // 2, -1)

    # The new mover's view.
    board = _flip_board(board)
    color = 1 - x.color
    en_passant = jnp.where(en_passant >= 0, (en_passant // 8) * 8 + 7 - en_passant % 8, -1).astype(jnp.int32)
    castling_rights = (x.castling_rights & keep)[::-1]
    history = jnp.concatenate([board[None], _flip_board(x.board_history[:-1])])
    h = zobrist_hash(board, color, castling_rights, en_passant)
    return BoardState(
        color=color,
        board=board,
        castling_rights=castling_rights,
        en_passant=en_passant,
        halfmove_count=jnp.where(captured | is_pawn, 0, x.halfmove_count + 1).astype(jnp.int32),
        fullmove_count=x.fullmove_count + (x.color == 1).astype(jnp.int32),
        step_count=x.step_count + 1,
        board_history=history,
        hash_history=jnp.concatenate([h[None], x.hash_history[:-1]]),
    )


def ended_by_rules(x: BoardState, actions: Array) -> Array:
    """bool []: the position `x` (one position) ends the game by chess's own rules: no legal move (mate or
    stalemate; `actions` its legal-action list [MAX_LEGAL_MOVES]), the fifty-move rule, insufficient material or a
    third occurrence."""
    occurrences = (x.hash_history == x.hash_history[0]).all(-1).sum()
    no_moves = actions[0] < 0
    return no_moves | (x.halfmove_count >= 100) | insufficient_material(x.board) | (occurrences >= 3)


def _outcome(x: BoardState, max_plies: int | None) -> tuple[Array, Array, Array, Array]:
    """(legal_actions int16 [256], legal_bits uint8 [73, 8], terminated bool [], rewards by colour float32 [2]) of a
    position."""
    actions, bits, in_check = legal_actions(x.board, x.castling_rights, x.en_passant)
    no_moves = actions[0] < 0
    terminated = ended_by_rules(x, actions)
    if max_plies is not None:
        terminated |= x.step_count >= max_plies
    loser = jnp.where(jnp.arange(2) == x.color, -1.0, 1.0).astype(jnp.float32)
    rewards = jnp.where(no_moves & in_check, loser, jnp.zeros(2, jnp.float32))
    return actions, bits, terminated, rewards


def state_from_position(x: BoardState, player_order: Array, max_plies: int | None = PGX_MAX_PLIES) -> ChessState:
    """A state for the position `x` (its history as given), jittable: legal moves, game end and rewards computed."""
    legal_actions, legal_bits, terminated, rewards = _outcome(x, max_plies)
    return ChessState(current_player=player_order[x.color], rewards=rewards[player_order], terminated=terminated,
                      truncated=jnp.bool_(False), legal_actions=legal_actions, legal_bits=legal_bits,
                      _step_count=jnp.int32(0),
                      _player_order=player_order, _x=x)


# ---------------------------------------------------------------- FEN and python-chess


def position_from_fen(fen: str) -> BoardState:
    """The `BoardState` (numpy leaves) of a FEN, without history: zeros behind the position."""
    placement, side, castling, en_passant, halfmove, fullmove = fen.split()
    board = np.zeros(64, np.int8)
    for row, line in enumerate(placement.split("/")):
        file = 0
        for c in line:
            if c.isdigit():
                file += int(c)
                continue
            code = "pnbrqk".index(c.lower()) + 1
            board[file * 8 + 7 - row] = code if c.isupper() else -code
            file += 1
    black = side == "b"
    rights = np.array([["Q" in castling, "K" in castling], ["q" in castling, "k" in castling]])
    ep = -1 if en_passant == "-" else "abcdefgh".index(en_passant[0]) * 8 + int(en_passant[1]) - 1
    if black:
        board = -board.reshape(8, 8)[:, ::-1].reshape(64)
        rights = rights[::-1]
        ep = -1 if ep < 0 else (ep // 8) * 8 + 7 - ep % 8
    color = np.int32(black)
    history = np.zeros((HISTORY, 64), np.int8)
    history[0] = board
    hashes = np.zeros((HASH_WINDOW, 2), np.uint32)
    hashes[0] = np.asarray(_hash_jit()(board, color, rights, np.int32(ep)))
    return BoardState(color=color, board=board, castling_rights=rights, en_passant=np.int32(ep),
                      halfmove_count=np.int32(halfmove), fullmove_count=np.int32(fullmove), step_count=np.int32(0),
                      board_history=history, hash_history=hashes)


@functools.cache
def _hash_jit() -> Any:
    return jax.jit(zobrist_hash)


@functools.cache
def _state_jit(max_plies: int | None) -> Any:
    return jax.jit(functools.partial(state_from_position, max_plies=max_plies))


def from_fen(fen: str, max_plies: int | None = PGX_MAX_PLIES) -> ChessState:
    """The state of a FEN position (player ids: White 0, Black 1, as pgx's `from_fen`), with no history behind it.
    Built on the host (`state_from_position` is the jittable core)."""
    with jax.ensure_compile_time_eval():  # concrete arrays even when called while tracing
        return _state_jit(max_plies)(position_from_fen(fen), jnp.int32([0, 1]))


def from_board(board: Any, max_plies: int | None = PGX_MAX_PLIES) -> ChessState:
    """The state of a python-chess `Board`'s position (its en passant square after every double step, as pgx
    keeps it; no history)."""
    return from_fen(board.fen(en_passant="fen"), max_plies)


def to_fen(state: ChessState) -> str:
    """The FEN of one (unbatched) state's position, with its move counters; the en passant square after every
    double step (pgx's convention)."""
    x = jax.tree.map(np.asarray, state._x)
    board = np.asarray(x.board, np.int32)
    rights = np.asarray(x.castling_rights)
    ep = int(x.en_passant)
    black = int(x.color) == 1
    if black:
        board = -board.reshape(8, 8)[:, ::-1].reshape(64)
        rights = rights[::-1]
        ep = -1 if ep < 0 else (ep // 8) * 8 + 7 - ep % 8
    rows = []
    for rank in range(7, -1, -1):
        row, gap = "", 0
        for file in range(8):
            code = board[file * 8 + rank]
            if code == 0:
                gap += 1
                continue
            row += (str(gap) if gap else "") + ("PNBRQK"[code - 1] if code > 0 else "pnbrqk"[-code - 1])
            gap = 0
        rows.append(row + (str(gap) if gap else ""))
    castling = "".join(c for c, ok in zip("KQkq", (rights[0, 1], rights[0, 0], rights[1, 1], rights[1, 0]), strict=True)
                       if ok) or "-"
    square = "-" if ep < 0 else "abcdefgh"[ep // 8] + str(ep % 8 + 1)
    return " ".join(["/".join(rows), "b" if black else "w", castling, square, str(int(x.halfmove_count)),
                     str(int(x.fullmove_count))])


def action_to_uci(action: int, board: np.ndarray, color: int) -> str:
    """An action as UCI (`e2e4`, `e7e8q`), given the mover's board (int [64], mover's side) and colour."""
    start, plane = divmod(int(action), 73)
    to = int(TO_SQUARE[start, plane])
    promotion = ""
    if int(board[start]) == PAWN and to % 8 == 7:  # a pawn reaching the last rank
        promotion = "rbn"[plane // 3] if plane < 9 else "q"

    def name(square: int) -> str:
        file, rank = divmod(square, 8)
        return "abcdefgh"[file] + str((7 - rank if color == 1 else rank) + 1)

    return name(start) + name(to) + promotion


# ---------------------------------------------------------------- the environment


def _where(pred: Array, a: Any, b: Any) -> Any:
    return jax.tree.map(lambda u, v: jnp.where(pred, u, v), a, b)


class ChessEnv(pgx.core.Env):
    """pgx's chess environment (`init`, `step`, its `State` conventions) on these rules. `max_plies`: the ply cap
    (pgx's 512 by default; None: none, the fifty-move rule ends every game)."""

    def __init__(self, max_plies: int | None = PGX_MAX_PLIES) -> None:
        super().__init__()
        self.max_plies = max_plies

    @functools.cached_property
    def _start(self) -> ChessState:
        with jax.ensure_compile_time_eval():
            return jax.tree.map(np.asarray, from_fen(STANDARD_FEN, self.max_plies))

    def init(self, key: Array) -> ChessState:
        """The standard start; the player ids of White and Black drawn from `key` as pgx draws them."""
        order = jnp.array([[0, 1], [1, 0]], jnp.int32)[jax.random.bernoulli(key).astype(jnp.int32)]
        state = jax.tree.map(jnp.asarray, self._start)
        return state.replace(_player_order=order, current_player=order[state._x.color],
                             rewards=state.rewards[order])

    def step(self, state: ChessState, action: Array, key: Array | None = None) -> ChessState:
        """Plays `action`. A finished game stays as it is with zero rewards; an illegal action loses the game for
        the mover (pgx's `Env.step`)."""
        del key
        action = jnp.asarray(action, jnp.int32)
        x = play_move(state._x, action)
        legal_actions, legal_bits, terminated, rewards = _outcome(x, self.max_plies)
        order = state._player_order
        played = state.replace(current_player=order[x.color], rewards=rewards[order], terminated=terminated,
                               legal_actions=legal_actions, legal_bits=legal_bits, _step_count=state._step_count + 1,
                               _x=x)
        finished = state.terminated | state.truncated
        new = _where(finished, state.replace(rewards=jnp.zeros_like(state.rewards)), played)
        illegal = ~finished & ~(state.legal_actions == action).any()
        penalty = jnp.where(jnp.arange(2) == state.current_player, -1.0, 1.0).astype(jnp.float32)
        return new.replace(rewards=jnp.where(illegal, penalty, new.rewards), terminated=new.terminated | illegal)

    def observe(self, state: ChessState, player_id: Array | None = None) -> Array:
        if player_id is not None:
            raise ValueError("the observation is the player to move's (pgx's default)")
        return state.observation

    def _init(self, key: Array) -> ChessState:
        return self.init(key)

    def _step(self, state: Any, action: Array, key: Any) -> ChessState:
        return self.step(state, action)

    def _observe(self, state: Any, player_id: Array) -> Array:
        return state.observation

    @property
    def id(self) -> Any:
        return "chess"

    @property
    def version(self) -> str:
        return "azjax-1"

    @property
    def num_players(self) -> int:
        return 2

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (8, 8, 119)
