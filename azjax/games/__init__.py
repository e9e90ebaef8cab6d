"""Games: a registry of pgx-backed two-player games behind one small adapter.

Every game is seen through `Game`, whose jittable methods take and return a `GameState`:

    state = game.init(key)                  # a new game (optionally with a komi)
    state = game.step(state, action)        # one move
    state.observation, state.legal_action_mask, state.current_player,
    state.terminated, state.rewards         # read-outs, as in pgx

`GameState` wraps the pgx state and adds the per-game komi, so a single batch of Go games can mix
komi values (pgx fixes the komi per environment object). The Go adapter builds pgx's Go with komi 0
and rescores finished games from the board with each game's own komi (area scoring, Tromp-Taylor).

Host-side helpers (`render`, `action_to_str`, `parse_action`) speak each game's usual notation:
Connect Four columns 1-7, Go vertices (`D4`, `pass`), UCI moves for chess. What else differs between
games (komi, board scores, FEN starts, colour names, GTP's vertex case) is asked of the game
(`has_komi`, `check_komi`, `scored`, `black_margin`, `has_fen`, `start_position`, `fen`, `side_to_move`,
`move_to_gtp`, ...), so host code never tests a game's type.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pgx._src.games.go as pgx_go
from flax import struct

from azjax.games.go_rules import go_env

Array = jax.Array


@struct.dataclass
class GameState:
    """One game (or a batch of games: every leaf gains leading axes).

    Attributes:
      env: the pgx state.
      komi: float32 [], points given to White (Go only; 0 for other games).
    """

    env: Any
    komi: Array

    @property
    def observation(self) -> Array:
        return self.env.observation

    @property
    def legal_action_mask(self) -> Array:
        return self.env.legal_action_mask

    @property
    def current_player(self) -> Array:
        return self.env.current_player

    @property
    def terminated(self) -> Array:
        return self.env.terminated

    @property
    def rewards(self) -> Array:
        """float32 [..., 2]: reward of each player id for the last move."""
        return self.env.rewards

    @property
    def move_number(self) -> Array:
        """int32 []: moves played since the game's (or start position's) first move."""
        return self.env._step_count


@dataclasses.dataclass(frozen=True)
class Game:
    """A pgx environment with azjax's conventions.

    Attributes:
      name: registry id (`connect_four`, `go_7x7`, `go_9x9`, `chess`).
      env: the pgx environment.
      max_moves: upper bound on a game's length (pgx's own termination rules guarantee it). Go: the move cap, after
        which pgx ends a game and scores the board where it stands (`cut_short` tells such a game apart).
      komi: default komi (Go), 0 otherwise.
    """

    name: str
    env: pgx.Env
    max_moves: int
    komi: float = 0.0

    @property
    def num_actions(self) -> int:
        return int(self._shapes.legal_action_mask.shape[-1])

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return tuple(self._shapes.observation.shape)

    @functools.cached_property
    def _shapes(self) -> Any:
        # pgx's own `num_actions` / `observation_shape` run `init` eagerly on every access (~0.2-2 s for chess).
        return jax.eval_shape(self.env.init, jax.random.PRNGKey(0))

    # What differs between games, asked by the host side (engines, arenas, records) instead of testing the type.
    has_komi: ClassVar[bool] = False  # Go: games carry a komi (`GameState.komi`)
    scored: ClassVar[bool] = False  # Go: a game ends with a board score (`black_margin`), not just a winner
    has_fen: ClassVar[bool] = False  # chess: positions are set up and written as FEN
    notation_reads_position: ClassVar[bool] = False  # chess: `action_to_str` needs the position, not the action only
    record_format: ClassVar[str] = "text"  # how a played game is written (`azjax.engines.records`): text, sgf, pgn
    # The observation alone identifies the position, and its stones count the plies played (Connect Four);
    # Go's and chess's observations carry history planes. Lets a run count distinct positions exactly.
    observation_is_position: ClassVar[bool] = False

    @property
    def is_go(self) -> bool:
        return False

    @property
    def is_chess(self) -> bool:
        return False

    def init(self, key: Array, komi: Array | float | None = None) -> GameState:
        """A new game. `komi` overrides the default komi (Go)."""
        komi = self.komi if komi is None else komi
        return GameState(env=self.env.init(key), komi=jnp.asarray(komi, jnp.float32))

    def step(self, state: GameState, action: Array) -> GameState:
        """Plays `action` for the player to move. A finished game stays as it is (zero rewards)."""
        return state.replace(env=self.env.step(state.env, action))

    def cut_short(self, state: GameState) -> Array:
        """bool [...]: the game ended at the move cap (`max_moves`, Go), not by the game's rules. Jittable; batched
        states give one value per game."""
        return jnp.zeros_like(state.terminated)

    # ----- host-side helpers (numpy; one unbatched state) -----

    def start_position(self, komi: float = 0.0, fen: str | None = None) -> GameState:
        """The start of a host-side game with `komi` (used by games that have one) or from `fen` (chess)."""
        if fen is not None:
            raise ValueError(f"FEN positions apply to chess only, not {self.name}")
        return self.init(jax.random.key(0), komi=komi)

    def check_komi(self, komi: float) -> float:
        """`komi` as a float; raises ValueError if the game has no komi or the value is unreasonable."""
        raise ValueError(f"komi applies to Go only, not {self.name}")

    def black_margin(self, state: GameState) -> Array:
        """float32 []: Black's board lead minus komi (games with `scored`; > 0: Black wins on the board)."""
        raise ValueError(f"scoring applies to Go only, not {self.name}")

    def fen(self, state: GameState) -> str:
        raise ValueError(f"FEN applies to chess only, not {self.name}")

    def side_to_move(self, state: GameState, num_moves: int) -> str:
        """"b" or "w" (GTP's colour names) for the side to move after `num_moves` moves from the start: here the
        first player is "b"."""
        return "b" if num_moves % 2 == 0 else "w"

    def move_to_gtp(self, move: str) -> str:
        """A move as GTP analysis writes it (Go: vertices in upper case, `PASS`); other games' notation as is."""
        return move

    def move_from_gtp(self, text: str) -> str:
        """A GTP engine's reply as this game's notation writes it (Go: lower case; parsing ignores case)."""
        return text

    def render(self, state: GameState) -> str:
        raise NotImplementedError(f"{self.name} has no text rendering")

    def action_to_str(self, state: GameState, action: int) -> str:
        return str(int(action))

    def parse_action(self, state: GameState, text: str) -> int:
        """The action for `text`; raises ValueError with a reason if it is malformed or illegal."""
        raise NotImplementedError

    def _check_legal(self, state: GameState, action: int, text: str) -> int:
        if not bool(np.asarray(state.legal_action_mask)[action]):
            raise ValueError(f"illegal move: {text!r}")
        return action


# ---------------------------------------------------------------- Connect Four


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


# ---------------------------------------------------------------- Go

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


def where_games(mask: Array, new: Any, old: Any) -> Any:
    """Row i of `new` where `mask[i]` ([B] bool), else row i of `old`, over every leaf of two batched pytrees
    (GameStates [B]); `new` is cast to `old`'s dtypes."""
    rows = lambda n, o: jnp.where(mask.reshape(-1, *([1] * (o.ndim - 1))), n.astype(o.dtype), o)  # noqa: E731
    return jax.tree.map(rows, new, old)


def board_arrays(states: GameState) -> Any:
    """pgx's own state of the board (its private `_x`: chess `board`, `color`, `en_passant`, ...; Go `board`,
    `color`, ...), batched as `states` are. The one door to it outside this module, for rules code such as a
    material count."""
    return states.env._x


def board_lead_black(x: pgx_go.GameState, size: int) -> Array:
    """float32 []: Black's area minus White's area (stones + surrounded empty points), before komi."""
    scores = pgx_go._count_scores(x, size)
    return (scores[0] - scores[1]).astype(jnp.float32)


# ---------------------------------------------------------------- chess

STANDARD_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
# Odds starts: the side giving odds (White) lacks the piece; conventional squares (queen d1, rook a1,
# knight b1; the lost rook also loses its castling right).
ODDS_FENS = {
    "standard": STANDARD_FEN,
    "queen_odds": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR w KQkq - 0 1",
    "rook_odds": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/1NBQKBNR w Kkq - 0 1",
    "knight_odds": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/R1BQKBNR w KQkq - 0 1",
}
_PROMOTIONS = "rbn"  # pgx underpromotion index 0, 1, 2; -1 means queen
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
    """A pgx chess state for a FEN; raises ValueError naming the problem if the FEN is not legal."""
    from pgx.experimental.chess import from_fen

    return from_fen(check_fen(fen))


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
    has_fen: ClassVar[bool] = True
    notation_reads_position: ClassVar[bool] = True  # the mover's side and pawn promotions
    record_format: ClassVar[str] = "pgn"

    @property
    def is_chess(self) -> bool:
        return True

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
            rewards = jnp.where(jnp.arange(2) == env.current_player, mover_result, -mover_result)  # by player id
            env = env.replace(
                terminated=env.terminated | at_cap,
                rewards=jnp.where(at_cap, rewards, env.rewards),
                # pgx's convention for finished games: every action "legal" (and without effect).
                legal_action_mask=env.legal_action_mask | at_cap,
            )
        return state.replace(env=env)

    def start_position(self, komi: float = 0.0, fen: str | None = None) -> GameState:
        if fen is not None and fen != STANDARD_FEN:
            return GameState(env=chess_state_from_fen(fen), komi=jnp.float32(0.0))
        return self.init(jax.random.key(0))

    def side_to_move(self, state: GameState, num_moves: int) -> str:
        return "w" if int(np.asarray(state.env._x.color)) == 0 else "b"

    def fen(self, state: GameState) -> str:
        from pgx.experimental.chess import to_fen

        env = jax.tree.map(np.asarray, state.env)
        # pgx writes fixed move counters; carry the real ones.
        head = to_fen(env).split()[:4]
        x = env._x
        return " ".join(head + [str(int(x.halfmove_count)), str(int(x.fullmove_count))])

    def render(self, state: GameState) -> str:
        import chess as pychess

        return str(pychess.Board(self.fen(state)))

    def action_to_str(self, state: GameState, action: int) -> str:
        x = state.env._x
        action = int(action)
        from_, plane = divmod(action, 73)
        to = int(_from_plane()[from_, plane])
        piece = int(np.asarray(x.board)[from_])
        promo = ""
        if piece == 1 and to % 8 == 7:  # a pawn reaching the last rank (pgx sees from the mover's side)
            promo = _PROMOTIONS[plane // 3] if plane < 9 else "q"
        black = int(np.asarray(x.color)) == 1
        return _square(from_, black) + _square(to, black) + promo

    def parse_action(self, state: GameState, text: str) -> int:
        t = text.strip().lower()
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        for a in legal:
            if self.action_to_str(state, int(a)) == t:
                return int(a)
        if len(t) in (4, 5) and t[0] in "abcdefgh" and t[2] in "abcdefgh" and t[1] in "12345678" and t[3] in "12345678":
            raise ValueError(f"illegal move: {text!r}")
        raise ValueError(f"not a UCI move (e.g. e2e4, e7e8q): {text!r}")


@functools.cache
def _from_plane() -> np.ndarray:
    """pgx's (from square, plane) -> to square table, as numpy (indexing the jax array costs ~0.2 ms a move)."""
    from pgx._src.games.chess import FROM_PLANE

    return np.asarray(FROM_PLANE)


def _square(pos: int, black: bool) -> str:
    """pgx square index (file * 8 + rank, from the mover's side) to algebraic."""
    file, rank = divmod(pos, 8)
    if black:
        rank = 7 - rank
    return "abcdefgh"[file] + str(rank + 1)


_FEN_CACHE: dict[str, Any] = {}


def _cached_fen_state(fen: str) -> Any:
    if fen not in _FEN_CACHE:
        # Eager even when the first `init` is traced (inside jit/vmap): the cache must hold concrete arrays.
        with jax.ensure_compile_time_eval():
            _FEN_CACHE[fen] = jax.tree.map(np.asarray, chess_state_from_fen(fen))
    return jax.tree.map(jnp.asarray, _FEN_CACHE[fen])


# ---------------------------------------------------------------- registry

GAMES = ("connect_four", "go_7x7", "go_9x9", "chess")
MAX_CHESS_PLIES = 512  # pgx ends (draws) a chess game here, as AlphaZero did
DEFAULT_KOMI = {"go_7x7": 9.5, "go_9x9": 7.5}
# pgx ends a Go game after size² x 2 moves (98 on 7x7, 162 on 9x9) and scores the board where it stands, short of
# the end of some real games. Self-play keeps that cap (its games, and the loop goldens, depend on it). Engines,
# arenas and human games (`play_max_moves`, through `azjax.build.game_named`) allow 8 x size² moves (392 on 7x7,
# 648 on 9x9), far above any real game; one that still reaches the cap is reported as cut short (`Game.cut_short`).
GO_SELFPLAY_MOVES_PER_POINT = 2
GO_PLAY_MOVES_PER_POINT = 8


def play_max_moves(name: str) -> int | None:
    """The move cap of played (not self-play) games of `name`: Go's `GO_PLAY_MOVES_PER_POINT` x size²; None for
    the other games, whose own rules end every game (chess: a draw after `MAX_CHESS_PLIES`)."""
    if not name.startswith("go_") or name not in GAMES:
        return None
    return GO_PLAY_MOVES_PER_POINT * int(name[3]) ** 2


def make_game(name: str, *, komi: float | None = None, start: str | None = None, adjudicate_plies: int = 0,
              adjudicate_margin: float = 3.0, adjudicate_result: str = "margin", max_moves: int | None = None) -> Game:
    """The game `name` from the registry.

    Args:
      name: one of `GAMES`.
      komi: Go only; the default komi of new games (7x7: 9.5, 9x9: 7.5).
      start: chess only; `standard`, an odds start (`queen_odds`, `rook_odds`, `knight_odds`)
        or a FEN.
      adjudicate_plies, adjudicate_margin: chess only; games still running after this many plies end, won by
        the side this many pawns ahead in material, else drawn (0 = off: chess's own rules).
      adjudicate_result: chess only; "margin" (the above) or "proportional" (the lead / margin, clipped to
        [-1, 1]; `material_result`).
      max_moves: Go only; the move cap, after which a game ends scored where it stands (default: self-play's,
        `GO_SELFPLAY_MOVES_PER_POINT` x size², pgx's own; `play_max_moves(name)` is the cap of played games).
    """
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; choose one of {', '.join(GAMES)}")
    if komi is not None and not name.startswith("go_"):
        raise ValueError(f"komi applies to Go only, not {name!r}")
    if start not in (None, "", "standard") and name != "chess":
        raise ValueError(f"start positions apply to chess only, not {name!r}")
    if adjudicate_plies and name != "chess":
        raise ValueError(f"material adjudication applies to chess only, not {name!r}")
    if max_moves is not None and not name.startswith("go_"):
        raise ValueError(f"max_moves applies to Go only, not {name!r} (chess: adjudicate_plies)")
    if max_moves is not None and max_moves < 1:
        raise ValueError(f"max_moves must be >= 1, got {max_moves}")
    if adjudicate_result not in ADJUDICATE_RESULTS:
        raise ValueError(f"adjudicate_result must be one of {', '.join(ADJUDICATE_RESULTS)}, got {adjudicate_result!r}")
    if not 0 <= adjudicate_plies < MAX_CHESS_PLIES:
        raise ValueError(f"adjudicate_plies must be in [0, {MAX_CHESS_PLIES}) (0 = off), got {adjudicate_plies}")
    if name == "connect_four":
        return ConnectFour(name=name, env=pgx.make("connect_four"), max_moves=42)
    if name.startswith("go_"):
        size = int(name[3])
        komi = DEFAULT_KOMI[name] if komi is None else float(komi)
        if (komi * 2) % 2 != 1:
            raise ValueError(f"komi must be a half-integer (e.g. 7.5) so no game is drawn, got {komi}")
        cap = GO_SELFPLAY_MOVES_PER_POINT * size * size if max_moves is None else int(max_moves)
        return Go(name=name, env=go_env(size, cap), max_moves=cap, komi=komi, size=size)
    fen = ODDS_FENS.get(start or "standard", start)
    assert fen is not None
    check_fen(fen)  # validate now, with a clear error (the pgx state is built on the first `init`)
    return Chess(name=name, env=pgx.make("chess"), max_moves=adjudicate_plies or MAX_CHESS_PLIES, start_fen=fen,
                 adjudicate_plies=adjudicate_plies, adjudicate_margin=float(adjudicate_margin),
                 adjudicate_result=adjudicate_result)
