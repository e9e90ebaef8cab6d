"""The game adapter every game is seen through: `Game` and its `GameState`, with helpers over batched states.

    state = game.init(key)                  # a new game (optionally with a komi)
    state = game.step(state, action)        # one move
    state.observation, state.legal_action_mask, state.current_player,
    state.terminated, state.rewards         # read-outs, as in pgx

`GameState` wraps the pgx state and adds the per-game komi, so a single batch of Go games can mix komi values
(pgx fixes the komi per environment object). Each game is a subclass in its own module (`connect_four.py`,
`go.py`, `chess.py`); `registry.py` makes them by name.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pgx
from flax import struct

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
        # pgx's own `num_actions` / `observation_shape` run `init` eagerly on every access (~0.2-2 s for chess). The
        # mask and observation may be computed from the state (chess) rather than stored: shape them as read.
        def read(key: Array) -> dict[str, Array]:
            state = self.env.init(key)
            return {"legal_action_mask": state.legal_action_mask, "observation": state.observation}

        return types.SimpleNamespace(**jax.eval_shape(read, jax.random.PRNGKey(0)))

    # What differs between games, asked by the host side (engines, arenas, records) instead of testing the type.
    has_komi: ClassVar[bool] = False  # Go: games carry a komi (`GameState.komi`)
    scored: ClassVar[bool] = False  # Go: a game ends with a board score (`black_margin`), not just a winner
    has_fen: ClassVar[bool] = False  # chess: positions are set up and written as FEN
    notation_reads_position: ClassVar[bool] = False  # chess: `action_to_str` needs the position, not the action only
    record_format: ClassVar[str] = "text"  # how a played game is written (`azjax.engines.records`): text, sgf, pgn
    # The observation alone identifies the position, and its stones count the plies played (Connect Four);
    # Go's and chess's observations carry history planes. Lets a run count distinct positions exactly.
    observation_is_position: ClassVar[bool] = False
    # The width of a search tree's nodes (`azjax.search.layout`): None, a child per action of the action space
    # (the games whose action space is small); chess: 256 children, a node's legal moves (at most 218) in order.
    search_width: ClassVar[int | None] = None

    def legal_actions(self, state: GameState) -> Array:
        """int32 [..., search_width]: the legal actions of each state in increasing order, -1 after the last.
        Batched states give one row per game. Only for games with a `search_width`."""
        if self.search_width is None:
            raise ValueError(f"{self.name} searches over its whole action space (no search_width)")
        return compact_actions(state.legal_action_mask, self.search_width)

    # The replay keeps a position's policy target as this many (action, probability) pairs instead of a dense
    # [num_actions] row (`azjax.replay.SparsePolicy`): at least the most legal moves any position has, since the
    # search's target is zero off the legal moves. None: dense (the legal moves are not far fewer than the actions).
    policy_width: ClassVar[int | None] = None

    def pack_observation(self, obs: Array) -> Any:
        """What the replay stores of observations `obs` [..., *observation_shape]: a pytree of arrays with the
        same leading axes, which `unpack_observation` turns back into `obs` bit for bit. Default: `obs` itself
        (Connect Four's and Go's observations are bool planes already)."""
        return obs

    def unpack_observation(self, packed: Any) -> Array:
        """The observations [..., *observation_shape] (the observation's dtype) that `pack_observation` packed."""
        return packed

    def policy_layout(self) -> tuple[int, np.ndarray] | None:
        """(planes, index int [num_actions]) where moves start from a board square (chess): move a's logit is the
        policy head's output at flat position index[a] of its [H, W, planes] planes (`Config.policy_head="conv"`).
        None: the game has no such layout (a dense policy head only)."""
        return None

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

    def draw_repetition(self, state: GameState) -> GameState:
        """The game ended as a draw where its position occurred before (Lc0's two-fold rule, for search trees).
        A game whose rules forbid or preclude repeating a position has nothing to end: the state as it is."""
        return state

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


def compact_actions(mask: Array, width: int) -> Array:
    """int32 [..., width]: the indices of the True entries of `mask` [..., A] in increasing order, -1 after the
    last; entries past `width` are dropped (a caller sizes `width` to the most there can be)."""
    rank = jnp.cumsum(mask, axis=-1, dtype=jnp.int32) - 1  # [..., A]: each True entry's place in the list
    rank = jnp.where(mask & (rank < width), rank, width)  # the others write past the end, dropped
    actions = jnp.broadcast_to(jnp.arange(mask.shape[-1], dtype=jnp.int32), mask.shape)
    lead = mask.shape[:-1]
    flat_rank = rank.reshape(-1, mask.shape[-1])
    out = jnp.full((flat_rank.shape[0], width), -1, jnp.int32)
    rows = jnp.arange(flat_rank.shape[0])[:, None]
    out = out.at[rows, flat_rank].set(actions.reshape(flat_rank.shape), mode="drop")
    return out.reshape(*lead, width)


def where_games(mask: Array, new: Any, old: Any) -> Any:
    """Row i of `new` where `mask[i]` ([B] bool), else row i of `old`, over every leaf of two batched pytrees
    (GameStates [B]); `new` is cast to `old`'s dtypes."""
    rows = lambda n, o: jnp.where(mask.reshape(-1, *([1] * (o.ndim - 1))), n.astype(o.dtype), o)  # noqa: E731
    return jax.tree.map(rows, new, old)


def board_arrays(states: GameState) -> Any:
    """pgx's own state of the board (its private `_x`: chess `board`, `color`, `en_passant`, ...; Go `board`,
    `color`, ...), batched as `states` are. The one door to it outside the games package, for rules code such as a
    material count."""
    return states.env._x

