"""A host-side engine: one game position, a network and its search, with per-move statistics.

    engine = Engine.from_checkpoint("results/models/go9", visits=64)
    engine.reset(komi=7.5)                 # Go: per-game komi;  chess: engine.reset(fen=FEN)
    engine.play("D4"); engine.play("E5")   # the game's notation (Go vertices, C4 columns 1-7, UCI moves)
    result = engine.search()               # a SearchResult: best move, value, cp (chess), PV, table
    engine.play_action(result.best_action); engine.undo()

The GTP, UCI and analysis front ends (`azjax.engines.gtp`, `azjax.engines.uci`, `azjax.cli.analyze`) and the arena's
checkpoint players share this class. The position is the start state (game start with a komi, or a
chess FEN) plus the list of actions played; `undo` pops the last one.

Searches run on a batch of one position (or a padded batch for `search_batch`), jitted once per
(search spec, batch size); the jitted function returns only the root statistics (not the tree), so
nothing large crosses to the host. Per-move statistics follow lc0's verbose move stats (METHODS.md
section 5), all from the view of the player to move at the root:

  * N: root child visits; P: prior (network policy over legal moves, after masking);
  * Q: the child's mean backed-up value; for an unvisited child the root's search value (a
    first-play-urgency stand-in, so that Q+U is defined for every legal move);
  * U: c(N_parent) * P * sqrt(N_parent) / (1 + N) with mctx's PUCT constant
    c = pb_c_init + log((N_parent + pb_c_base + 1) / pb_c_base), on the raw [-1, 1] Q scale.
    (mctx's selection itself min-max normalises Q among siblings, and the Gumbel root selects by
    sequential halving, so Q+U is a diagnostic, exactly as lc0 shows it);
  * V: the raw network value of the child position (None if never expanded); for a terminal child
    the game's reward.

`SearchResult.value` is the chosen move's Q (the root's search value if it has no visits), the number
lc0 turns into centipawns: cp = 111.714640912 * tan(1.5620688421 * Q).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.build import board_game, cached_evaluator, load_model, search_spec
from azjax.config import Config
from azjax.games import (
    ODDS_FENS,
    STANDARD_FEN,
    Chess,
    Game,
    GameState,
    Go,
    board_lead_black,
    check_fen,
    chess_state_from_fen,
)
from azjax.search import Evaluator, SearchSpec, run_search, searched_choice

PB_C_BASE = 19652.0  # mctx's muzero_policy default
PV_LENGTH = 16  # maximum principal-variation length read out of a search
TOP_K_PV = 16  # root children (by visits) that get their own PV (lz-analyze)
CP_SCALE, CP_ANGLE = 111.714640912, 1.5620688421


def cp_from_q(q: float) -> float:
    """lc0's centipawn mapping of Q in [-1, 1] (METHODS.md section 5)."""
    q = max(-1.0, min(1.0, float(q)))
    return CP_SCALE * math.tan(CP_ANGLE * q)


@dataclasses.dataclass
class MoveStat:
    """One legal root move after a search (values from the root mover's view)."""

    move: str
    action: int
    n: int
    p: float
    q: float
    u: float
    v: float | None
    pv: list[str] = dataclasses.field(default_factory=list)  # this move first; only for the top children

    @property
    def q_plus_u(self) -> float:
        return self.q + self.u

    def to_dict(self) -> dict[str, Any]:
        return dict(move=self.move, action=self.action, N=self.n, P=self.p, Q=self.q, U=self.u,
                    QU=self.q_plus_u, V=self.v, pv=self.pv)


@dataclasses.dataclass
class SearchResult:
    """A finished search of one position.

    Attributes:
      best_move, best_action: the move the engine plays (PUCT: most visits; Gumbel: the sequential
        halving winner); "" and -1 when the game is over.
      value: the chosen move's Q (root search value if unvisited), in [-1, 1], player to move's view.
      root_value: the root's backed-up search value; net_value: the network's raw value of the root.
      visits: total root child visits; stats: every legal move, sorted by N (most first), ties by P.
      pv: the principal variation (chosen move, then the most-visited child at each level).
      cp: centipawns from `value` (chess only, else None); seconds: wall time of the search call.
    """

    best_move: str
    best_action: int
    value: float
    root_value: float
    net_value: float
    visits: int
    stats: list[MoveStat]
    pv: list[str]
    cp: float | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["stats"] = [s.to_dict() for s in self.stats]
        return d


# ---------------------------------------------------------------- the jitted read-out


def _pv_from(tree: Any, first: jax.Array, length: int) -> jax.Array:
    """int32 [B, length]: `first` [B] then the most-visited child at each level, -1 where it stops."""
    batch = jnp.arange(first.shape[0])
    node = tree.children_index[batch, 0, first]
    pv = jnp.full((first.shape[0], length), -1, jnp.int32).at[:, 0].set(first)
    alive = tree.children_visits[batch, 0, first] > 0

    def body(i: int, carry: tuple[jax.Array, jax.Array, jax.Array]):
        pv, node, alive = carry
        safe = jnp.maximum(node, 0)
        visits = tree.children_visits[batch, safe]  # [B, A]
        a = jnp.argmax(visits, axis=-1).astype(jnp.int32)
        alive = alive & (node >= 0) & (visits[batch, a] > 0)
        pv = pv.at[:, i].set(jnp.where(alive, a, -1))
        node = jnp.where(alive, tree.children_index[batch, safe, a], -1)
        return pv, node, alive

    pv, _, _ = jax.lax.fori_loop(1, length, body, (pv, node, alive))
    return pv


def search_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator, params: Any, key: jax.Array,
                      states: GameState) -> dict[str, jax.Array]:
    """Runs `run_search` on `states` [B] and returns the root read-out (see the module docstring)."""
    out = run_search(spec, game, evaluate, params, key, states)
    tree = out.search_tree
    batch = jnp.arange(states.legal_action_mask.shape[0])
    legal = states.legal_action_mask
    n = tree.children_visits[:, 0]  # [B, A]
    logits = jnp.where(legal, tree.children_prior_logits[:, 0], -jnp.inf)
    p = jax.nn.softmax(logits, axis=-1)
    p = jnp.where(legal, p, 0.0)
    root_value = tree.node_values[:, 0]
    q_raw = tree.children_rewards[:, 0] + tree.children_discounts[:, 0] * tree.children_values[:, 0]
    q = jnp.where(n > 0, q_raw, root_value[:, None])
    n_parent = jnp.sum(n, axis=-1, keepdims=True).astype(jnp.float32)
    c = spec.pb_c_init + jnp.log((n_parent + PB_C_BASE + 1.0) / PB_C_BASE)
    u = c * p * jnp.sqrt(n_parent) / (1.0 + n)
    child = tree.children_index[:, 0]  # [B, A]
    expanded = child >= 0
    child_raw = jnp.take_along_axis(tree.raw_values, jnp.maximum(child, 0), axis=1)
    v = tree.children_rewards[:, 0] + tree.children_discounts[:, 0] * child_raw
    best = searched_choice(spec, out)
    best_q = jnp.where(n[batch, best] > 0, q_raw[batch, best], root_value)
    k = min(TOP_K_PV, n.shape[-1])
    _, top = jax.lax.top_k(n + 1e-6 * p, k)  # [B, K]
    top = top.astype(jnp.int32)
    top_pv = jax.vmap(lambda first: _pv_from(tree, first, PV_LENGTH), in_axes=1, out_axes=1)(top)
    return dict(
        n=n.astype(jnp.int32), p=p, q=q, u=u, v=v, expanded=expanded, best=best, best_q=best_q,
        root_value=root_value, net_value=tree.raw_values[:, 0], pv=_pv_from(tree, best, PV_LENGTH),
        top=top, top_pv=top_pv,
    )  # fmt: skip


@functools.cache
def _jitted_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator):
    return jax.jit(functools.partial(search_statistics, spec, game, evaluate))


@functools.lru_cache(maxsize=64)
def start_state(game: Game, komi: float = 0.0, fen: str | None = None) -> GameState:
    """The start of a game: `game.init` with `komi` (Go), or a chess position from `fen` (cached: pgx's
    eager init and FEN parsing take up to seconds)."""
    if isinstance(game, Chess) and fen is not None and fen != STANDARD_FEN:
        env = chess_state_from_fen(fen)
        return GameState(env=env, komi=jnp.float32(0.0))
    with jax.ensure_compile_time_eval():
        return game.init(jax.random.key(0), komi=komi if isinstance(game, Go) else None)


@functools.cache
def _jitted_step(game: Game):
    return jax.jit(game.step)


def _stack(states: Sequence[GameState]) -> GameState:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


# ---------------------------------------------------------------- the engine


class Position:
    """A game position: the start (game start with a komi, or a chess FEN) plus the moves played.

    Args:
      game: the game (for chess, the standard-start game: other starts come from `fen`).
      start_fen: chess only: the default start position of `reset`.
    """

    def __init__(self, game: Game, start_fen: str | None = None):
        self.game = game
        self.default_start_fen = (start_fen or STANDARD_FEN) if isinstance(game, Chess) else None
        self.komi = float(game.komi)
        self.start_fen = self.default_start_fen
        self.actions: list[int] = []
        self.moves: list[str] = []  # the actions in the game's notation
        self.states: list[GameState] = []
        self.reset()

    @property
    def is_go(self) -> bool:
        return isinstance(self.game, Go)

    @property
    def is_chess(self) -> bool:
        return isinstance(self.game, Chess)

    @property
    def state(self) -> GameState:
        return self.states[-1]

    def reset(self, *, komi: float | None = None, fen: str | None = None) -> None:
        """A new game from the start (Go: with `komi`, default the current komi; chess: from `fen`,
        default the checkpoint's start position). Raises ValueError for a bad komi or FEN."""
        if komi is not None:
            if not self.is_go:
                raise ValueError(f"komi applies to Go only, not {self.game.name}")
            komi = float(komi)
            if not math.isfinite(komi) or abs(komi) > 2 * self.game.size ** 2:  # type: ignore[attr-defined]
                raise ValueError(f"unreasonable komi {komi}")
            self.komi = komi
        if fen is not None and not self.is_chess:
            raise ValueError(f"FEN positions apply to chess only, not {self.game.name}")
        if self.is_chess:
            self.start_fen = fen or self.default_start_fen
        start = start_state(self.game, self.komi if self.is_go else 0.0, self.start_fen)
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
        if self.is_over:
            raise ValueError("the game is over")
        action = self.game.parse_action(self.state, text)
        self.play_action(action)
        return action

    def play_action(self, action: int) -> None:
        if self.is_over:
            raise ValueError("the game is over")
        if not 0 <= int(action) < self.game.num_actions:
            raise ValueError(f"no such action: {action}")
        if not bool(np.asarray(self.state.legal_action_mask)[int(action)]):
            raise ValueError(f"illegal move: {self.move_str(int(action))!r}")
        move = self.move_str(int(action))
        self.states.append(_jitted_step(self.game)(self.state, jnp.int32(action)))
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

    def to_move(self) -> str:
        """"b" or "w": Go's colours; chess: the side to move; Connect Four: "b" for the first player."""
        return color_to_move(self.game, self.state, len(self.actions))

    def render(self) -> str:
        return self.game.render(self.state)

    def fen(self) -> str:
        if not self.is_chess:
            raise ValueError(f"FEN applies to chess only, not {self.game.name}")
        return self.game.fen(self.state)  # type: ignore[attr-defined]

    def go_score(self) -> float:
        """Go: Black's Tromp-Taylor area lead minus komi (positive: Black wins)."""
        if not self.is_go:
            raise ValueError(f"scoring applies to Go only, not {self.game.name}")
        return float(board_lead_black(self.state.env._x, self.game.size)) - self.komi  # type: ignore[attr-defined]

    def outcome(self) -> float | None:
        """Finished games: the result for the player who moved first from the start (+1, 0, -1)."""
        if not self.is_over:
            return None
        first = int(np.asarray(self.states[0].current_player))
        return float(np.asarray(self.state.rewards)[first]) if len(self.states) > 1 else 0.0


class Engine(Position):
    """A game position plus a network and its evaluation search (no root noise, greedy move).

    Args:
      config: the checkpoint's config (network shape, search kind and constants, game, komi, start).
      params: the network parameters.
      visits: simulations per search (default: `config.eval_simulations`).
      n_scl: search-contempt node limit; None keeps the config's, 0 turns it off.
      search: "puct" or "gumbel" to override the config's search kind.
      seed: PRNG seed of the searches (Gumbel with gumbel_scale 0 and PUCT without noise are
        deterministic anyway).
    """

    def __init__(self, config: Config, params: Any, *, visits: int | None = None, n_scl: int | None = None,
                 search: str | None = None, seed: int = 0):
        if search:
            config = config.replace(eval_search=search)
        if n_scl is not None:
            config = config.replace(n_scl=n_scl or None)
        self.config = config
        self.params = params
        # The base game: chess positions from other FENs reuse it (only `init` depends on the start),
        # so every position shares one compiled search.
        game = board_game(config)
        start_fen = None
        if config.game == "chess":
            start_fen = check_fen(ODDS_FENS.get(config.start or "standard", config.start))
        super().__init__(game, start_fen)
        self.evaluate = cached_evaluator(config, self.game)
        self.visits = int(visits or config.eval_simulations)
        self.key = jax.random.key(seed)
        self.search_seconds: dict[tuple[int, int], float] = {}  # (visits, batch) -> seconds of a warm call
        self._compiled: set[tuple[int, int]] = set()  # (visits, batch) searches already run once

    @classmethod
    def from_checkpoint(cls, path: str, **kwargs: Any) -> Engine:
        config, params = load_model(path)
        return cls(config, params, **kwargs)

    # ----- settings

    @property
    def n_scl(self) -> int | None:
        return self.config.n_scl

    def set_n_scl(self, n_scl: int | None) -> None:
        if n_scl is not None and n_scl < 0:
            raise ValueError(f"n_scl must be >= 0 (0 = off), got {n_scl}")
        self.config = self.config.replace(n_scl=n_scl or None)

    def set_visits(self, visits: int) -> None:
        if int(visits) < 1:
            raise ValueError(f"visits must be >= 1, got {visits}")
        self.visits = int(visits)

    def spec(self, visits: int | None = None) -> SearchSpec:
        return search_spec(self.config, training=False, num_simulations=int(visits or self.visits))

    # ----- search

    def search(self, visits: int | None = None, child_pvs: bool | None = None) -> SearchResult:
        """Searches the current position (a batch of one)."""
        return self.search_batch([self.state], visits=visits, batch_size=1, child_pvs=child_pvs)[0]

    def search_batch(self, states: Sequence[GameState], visits: int | None = None,
                     batch_size: int | None = None, child_pvs: bool | None = None) -> list[SearchResult]:
        """Searches many positions with one compiled function: batches of `batch_size` (default all),
        the last one padded with copies of its last position.

        child_pvs: fill `MoveStat.pv` for the most-visited root moves (default: not for chess, whose
          notation needs the positions along each PV to be played out on the host)."""
        child_pvs = (not self.is_chess) if child_pvs is None else child_pvs
        states = list(states)
        if not states:
            return []
        batch_size = batch_size or len(states)
        visits = int(visits or self.visits)
        fn = _jitted_statistics(self.spec(visits), self.game, self.evaluate)
        results: list[SearchResult] = []
        for start in range(0, len(states), batch_size):
            chunk = states[start : start + batch_size]
            padded = chunk + [chunk[-1]] * (batch_size - len(chunk))
            self.key, sub = jax.random.split(self.key)
            t0 = time.perf_counter()
            out = jax.device_get(fn(self.params, sub, _stack(padded)))
            seconds = time.perf_counter() - t0
            cache_key = (visits, batch_size)
            if cache_key in self._compiled:
                self.search_seconds[cache_key] = seconds
            self._compiled.add(cache_key)
            for i, s in enumerate(chunk):
                results.append(self._result(s, {k: v[i] for k, v in out.items()}, seconds / len(chunk), child_pvs))
        return results

    def _result(self, state: GameState, out: dict[str, np.ndarray], seconds: float, child_pvs: bool) -> SearchResult:
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        over = bool(state.terminated) or legal.size == 0
        top_pv = {int(a): out["top_pv"][j] for j, a in enumerate(out["top"])} if child_pvs else {}
        stats = []
        for a in ([] if over else legal):
            a = int(a)
            pv = self.pv_strings(state, top_pv[a]) if a in top_pv and out["n"][a] > 0 else []
            stats.append(MoveStat(
                move=self.game.action_to_str(state, a), action=a, n=int(out["n"][a]), p=float(out["p"][a]),
                q=float(out["q"][a]), u=float(out["u"][a]),
                v=float(out["v"][a]) if out["expanded"][a] else None, pv=pv))
        best = -1 if over else int(out["best"])
        stats.sort(key=lambda s: (-s.n, s.action != best, -s.p))
        pv = [] if over else self.pv_strings(state, out["pv"])
        for s in stats:
            if s.action == best and not s.pv:
                s.pv = list(pv)
        value = float(out["best_q"]) if not over else 0.0
        return SearchResult(
            best_move=self.game.action_to_str(state, best) if best >= 0 else "",
            best_action=best,
            value=value,
            root_value=float(out["root_value"]),
            net_value=float(out["net_value"]),
            visits=int(out["n"].sum()),
            stats=stats,
            pv=pv,
            cp=cp_from_q(value) if self.is_chess else None,
            seconds=seconds,
        )

    def pv_strings(self, state: GameState, actions: np.ndarray) -> list[str]:
        """A PV's actions (-1 padded) in the game's notation, stepping the position where the notation
        depends on it (chess)."""
        out = []
        step = _jitted_step(self.game)
        for a in np.asarray(actions):
            a = int(a)
            if a < 0 or bool(state.terminated) or not bool(np.asarray(state.legal_action_mask)[a]):
                break
            out.append(self.game.action_to_str(state, a))
            if self.is_chess:
                state = step(state, jnp.int32(a))
        return out

    def genmove(self, visits: int | None = None) -> tuple[str, SearchResult]:
        """Searches, plays the chosen move and returns (move, search result)."""
        if self.is_over:
            raise ValueError("the game is over")
        result = self.search(visits)
        self.play_action(result.best_action)
        return result.best_move, result

    def visits_for_time(self, budget_s: float | None) -> int:
        """The visit budget that fits `budget_s` seconds: the configured visits, or the largest power of
        two below them whose measured (already compiled) search time fits; at least 1."""
        if budget_s is None or not self.search_seconds:
            return self.visits
        per_visit = max(s / v for (v, b), s in self.search_seconds.items() if b == 1) \
            if any(b == 1 for _, b in self.search_seconds) else None
        if per_visit is None or per_visit * self.visits <= budget_s:
            return self.visits
        v = 1
        while v * 2 <= self.visits and per_visit * v * 2 <= budget_s:
            v *= 2
        return v


def parse_position(position: Position, line: str) -> None:
    """Sets `position` from one line: moves in the game's notation from the start (spaces or commas
    between them); for chess also `FEN`, `FEN moves m1 m2 ...`, `startpos moves ...`. Raises
    ValueError (the position is then unchanged)."""
    text = line.strip()
    fen = None
    if position.is_chess:
        if text.startswith("startpos"):
            text = text[len("startpos") :].strip()
        elif "/" in text.split(" moves ")[0]:
            fen, _, text = text.partition(" moves ")
            fen = fen.strip()
        if text.startswith("moves"):
            text = text[len("moves") :]
    moves = text.replace(",", " ").split()
    position.set_position(moves, fen=fen)


def color_to_move(game: Game, state: GameState, num_moves: int) -> str:
    """"b" or "w" for the side to move (Connect Four: "b" = the first player)."""
    if isinstance(game, Go):
        return "b" if int(game.color_to_move(state)) == 0 else "w"
    if isinstance(game, Chess):
        return "w" if int(np.asarray(state.env._x.color)) == 0 else "b"
    return "b" if num_moves % 2 == 0 else "w"


def format_table(result: SearchResult, top: int | None = None, prefix: str = "", ascending: bool = False,
                 node_line: bool = True) -> list[str]:
    """lc0-style verbose move statistics, one line per move:

        e2e4 (322 ) N:     128 (P: 10.01%) (Q:  0.05778) (U: 0.05111) (Q+U:  0.10889) (V:  0.0556)

    `top` keeps the most-visited moves; `ascending` lists the most-visited last (lc0's order)."""
    stats = result.stats[:top] if top else list(result.stats)
    if ascending:
        stats = stats[::-1]
    width = max([len(s.move) for s in stats] + [4])
    lines = []
    for s in stats:
        v = f"{s.v: .4f}" if s.v is not None else " -.----"
        lines.append(f"{prefix}{s.move:<{width}} ({s.action:<4d}) N: {s.n:7d} (P: {100 * s.p:5.2f}%) "
                     f"(Q: {s.q: .5f}) (U: {s.u:.5f}) (Q+U: {s.q_plus_u: .5f}) (V: {v})")
    if node_line:
        lines.append(f"{prefix}{'node':<{width}} (    ) N: {result.visits:7d} (Q: {result.root_value: .5f}) "
                     f"(V: {result.net_value: .4f})")
    return lines
