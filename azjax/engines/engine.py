"""A host-side engine: one game position, a network and its search, with per-move statistics.

    engine = Engine.from_checkpoint("results/models/go9", visits=64)
    pos = engine.position                  # the game it plays (azjax.engines.position.Position)
    pos.reset(komi=7.5)                    # Go: per-game komi;  chess: pos.reset(fen=FEN)
    pos.play("D4"); pos.play("E5")         # the game's notation (Go vertices, C4 columns 1-7, UCI moves)
    result = engine.search()               # a SearchResult: best move, value, cp (chess), PV, table
    pos.play_action(result.best_action); pos.undo()

The GTP, UCI and analysis front ends (`azjax.engines.gtp`, `azjax.engines.uci`, `azjax.cli.analyze`) and the arena's
checkpoint players share this class. The engine holds its position (the start state: game start with a
komi, or a chess FEN, plus the list of actions played) and searches it or any other states of its game.

Searches run on a batch of one position (or a padded batch for `search_batch`), jitted once per
(search spec, batch size); the jitted function returns only the root statistics to the host (with tree reuse, the
tree too, kept on the device for the next search to continue), so nothing large crosses to the host. Per-move
statistics follow lc0's verbose move stats (docs/methods.md section 5), all from the view of the player to move at
the root:

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
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.build import board_game, cached_evaluator, load_model, make_network, search_spec
from azjax.config import Config
from azjax.engines.lc0 import MoveStat, SearchResult, cp_from_q
from azjax.engines.position import Position, jitted_step, stack_states
from azjax.games import ODDS_FENS, Game, GameState, check_fen
from azjax.network import with_moves_left
from azjax.search import Evaluator, ParentAwareEvaluator, SearchSpec
from azjax.search.readout import empty_search_tree, reused_search_statistics, search_statistics
from azjax.search.reuse import reusable, subtree, tree_size


@functools.cache
def _jitted_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator):
    return jax.jit(functools.partial(search_statistics, spec, game, evaluate))


@functools.cache
def _jitted_reused_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator):
    return jax.jit(functools.partial(reused_search_statistics, spec, game, evaluate))


@functools.cache
def _jitted_draw_probability(config: Config, game: Game) -> Callable[[Any, jax.Array], jax.Array]:
    """(params, observation [1, ...]) -> []: the draw probability of a win/draw/loss head (`value_head="wdl"`)."""
    net = make_network(config, game)

    def draw(params: Any, observation: jax.Array) -> jax.Array:
        _, wdl = net.apply(params, observation)
        return jax.nn.softmax(wdl[0])[1]

    return jax.jit(draw)


@functools.cache
def _jitted_moves_left(config: Config, game: Game) -> Callable[[Any, jax.Array], jax.Array]:
    """(params, observation [1, ...]) -> []: the plies the moves-left head predicts (`moves_left_loss_weight` > 0)."""
    apply = with_moves_left(make_network(config, game).apply)
    return jax.jit(lambda params, observation: apply(params, observation)[1][0])


# The subtree under the moves played re-indexed into a tree of another size (static), before a search of another
# visit count continues it: a small program per pair of sizes, so that the search itself is compiled once per size.
_jitted_subtree = jax.jit(subtree, static_argnums=(2, 3))


@dataclasses.dataclass(frozen=True)
class KeptTree:
    """The tree of the engine's last search, for the next one to continue (tree reuse).

    Attributes:
      tree: the search tree (device arrays, batch of one).
      start: (komi, start FEN) of the game it was searched in.
      actions: the moves from that start to its root.
      inherited: its nodes [0, inherited) came from the search before (the search evaluated the others).
    """

    tree: Any
    start: tuple[float, str | None]
    actions: tuple[int, ...]
    inherited: int = 0

    def plies_to(self, start: tuple[float, str | None], actions: Sequence[int]) -> np.ndarray | None:
        """int32 [1, 2]: the moves (-1 padded) from this tree's root to the position (`start` plus `actions`), when
        that position is the root or one or two moves below it; else None."""
        extra = len(actions) - len(self.actions)
        if start != self.start or not 0 <= extra <= MAX_REUSED_PLIES or tuple(actions[: len(self.actions)]) != \
                self.actions:
            return None
        return np.array([list(actions[len(self.actions) :]) + [-1] * (MAX_REUSED_PLIES - extra)], np.int32)


# (spec, game, evaluate, batch size) -> the search compiled ahead of time, shared by every engine of a process (an
# evaluator is made once per config, so it fixes the parameters' shapes). The lock keeps two threads from compiling
# one search twice.
_EXECUTABLES: dict[tuple[SearchSpec, Game, Any, int], Callable[..., Any]] = {}
_EXECUTABLES_LOCK = threading.Lock()


def clear_compiled_searches() -> None:
    """Drops the engines' searches compiled ahead of time (`jax.clear_caches` does not reach them): a process that
    builds engines of many settings, such as the test suite, keeps its memory bounded."""
    with _EXECUTABLES_LOCK:
        _EXECUTABLES.clear()
MAX_REUSED_PLIES = 2  # the engine's own move and the opponent's reply


# ---------------------------------------------------------------- the engine


class Engine:
    """A network and its evaluation search (no root noise, greedy move) over a game position it holds.

    Searches are compiled ahead of time, once per (search spec, batch size), and timed apart from their compilation
    by `clock`, so `SearchResult.seconds` (and the nps that UCI reports from it) is the search's own time.

    Args:
      config: the checkpoint's config (network shape, search kind and constants, game, komi, start).
      params: the network parameters.
      visits: simulations per search (default: `config.eval_simulations`).
      n_scl: an override of the config's search-contempt node limit: None keeps the config's `n_scl`, an int
        replaces it (0 turns search-contempt off, as in the config).
      search: "puct" or "gumbel" to override the config's search kind.
      seed: PRNG seed of the searches (Gumbel with gumbel_scale 0 and PUCT without noise are
        deterministic anyway).
      tree_reuse: `search` continues the last search's tree when the position is its root or one or two moves
        below it (lc0, KataGo): the subtree under the moves played is kept. PUCT adds visits until the root has the
        budget's (`visits` counts the kept ones, as KataGo's maxVisits does; a kept root with more visits than
        that, from an analysis, is searched no further). Gumbel starts the root afresh and runs `visits`
        simulations from it over the kept subtrees of its children (sequential halving plans the root's visits
        from zero). Not with search-contempt or a parent-aware (SAI) evaluator (`azjax.search.reuse` says why):
        those search afresh. Off: every search is fresh.
    """

    def __init__(self, config: Config, params: Any, *, visits: int | None = None, n_scl: int | None = None,
                 search: str | None = None, seed: int = 0, tree_reuse: bool = True):
        if search:
            config = config.replace(eval_search=search)
        if n_scl is not None:
            config = config.replace(n_scl=n_scl)
        self.config = config
        self.params = params
        # The base game: chess positions from other FENs reuse it (only `init` depends on the start),
        # so every position shares one compiled search.
        self.game = board_game(config)
        start_fen = check_fen(ODDS_FENS.get(config.start or "standard", config.start)) if self.game.has_fen else None
        self.position = Position(self.game, start_fen)
        self.evaluate = cached_evaluator(config, self.game)
        self.visits = int(visits or config.eval_simulations)
        self.key = jax.random.key(seed)
        self.search_seconds: dict[tuple[int, int], float] = {}  # (visits, batch) -> seconds of the last search
        self.compile_seconds = 0.0  # spent compiling searches, kept out of `search_seconds`
        self.tree_reuse = bool(tree_reuse)
        self.kept: KeptTree | None = None  # the last search's tree (tree reuse)
        self._empty_trees: dict[SearchSpec, Any] = {}

    clock: Callable[[], float] = staticmethod(time.perf_counter)  # seconds; tests set a fake clock

    @classmethod
    def from_checkpoint(cls, path: str, *, config_overrides: dict[str, Any] | None = None, **kwargs: Any) -> Engine:
        """The engine of a checkpoint or exported model; `config_overrides` replace config fields first (e.g. the
        Gumbel root's `eval_max_num_considered_actions`)."""
        config, params = load_model(path)
        return cls(config.replace(**(config_overrides or {})), params, **kwargs)

    # ----- settings

    @property
    def n_scl(self) -> int:
        """The search-contempt node limit the searches use (0: off)."""
        return self.config.n_scl

    def set_n_scl(self, n_scl: int) -> None:
        if n_scl < 0:
            raise ValueError(f"n_scl must be >= 0 (0 = off), got {n_scl}")
        self.config = self.config.replace(n_scl=n_scl)

    def set_twofold_draws(self, on: bool) -> None:
        """Chess: lc0's two-fold draws in the search (docs/methods.md section 11). The kept tree was searched under
        the other rule, so the next search starts afresh."""
        self.config = self.config.replace(twofold_draws=bool(on))
        self.kept = None

    def set_visits(self, visits: int) -> None:
        if int(visits) < 1:
            raise ValueError(f"visits must be >= 1, got {visits}")
        self.visits = int(visits)

    def spec(self, visits: int | None = None) -> SearchSpec:
        return search_spec(self.config, training=False, num_simulations=int(visits or self.visits))

    def set_tree_reuse(self, on: bool) -> None:
        self.tree_reuse = bool(on)
        self.clear_tree()

    def clear_tree(self) -> None:
        """Forgets the kept tree (a new game: lc0 and KataGo start it with an empty tree too)."""
        self.kept = None

    @property
    def reuses_trees(self) -> bool:
        """Whether `search` continues kept trees: `tree_reuse` is on and the search can (PUCT, no contempt or
        certainty propagation, a plain evaluator)."""
        spec = self.spec()
        return self.tree_reuse and reusable(spec.kind, spec.n_scl, isinstance(self.evaluate, ParentAwareEvaluator),
                                            spec.certainty)

    # ----- search

    def search(self, visits: int | None = None, child_pvs: bool | None = None) -> SearchResult:
        """Searches the current position (a batch of one), continuing the last search's tree where it can
        (`tree_reuse`)."""
        if not self.reuses_trees:
            return self.search_batch([self.position.state], visits=visits, batch_size=1, child_pvs=child_pvs)[0]
        child_pvs = (not self.game.notation_reads_position) if child_pvs is None else child_pvs
        visits = int(visits or self.visits)
        spec = self.spec(visits)
        pos = self.position
        start, actions = (pos.komi, pos.start_fen), tuple(pos.actions)
        states = stack_states([pos.state])
        self.key, sub = jax.random.split(self.key)
        plies = self.kept.plies_to(start, actions) if self.kept is not None else None
        descended = np.array([plies is not None and plies[0, 0] >= 0])
        budget = np.array([visits + 1], np.int32)  # PUCT: root visits, the kept ones included
        capacity = tree_size(spec.kind, visits)
        if plies is None:  # nothing to continue: an empty tree of this size (the same compiled search)
            previous = self._empty_tree(spec, states)
            plies = np.full((1, MAX_REUSED_PLIES), -1, np.int32)
        else:
            previous = self.kept.tree
            size = previous.node_visits.shape[1]
            if size < capacity or (size > capacity and spec.kind == "gumbel"):
                # Another size: the subtree moves into a tree of this search's size (Gumbel: if it fits).
                previous, _ = _jitted_subtree(previous, plies, capacity, self.game)
                plies = np.full((1, MAX_REUSED_PLIES), -1, np.int32)
            elif size > capacity:
                # A bigger PUCT tree (an analysis grew it): the subtree is searched on in that size, to this budget,
                # so that nothing is dropped; it moves into a tree of this size once it fits (here or a move later).
                moved, kept_nodes = _jitted_subtree(previous, plies, capacity, self.game)
                if int(kept_nodes[0]) > 0:
                    previous, plies = moved, np.full((1, MAX_REUSED_PLIES), -1, np.int32)
                else:
                    spec = self.spec(size - 1)
        search = self._executable(spec, sub, states, previous, plies, descended, budget)
        t0 = self.clock()
        out, tree = search(self.params, sub, states, previous, plies, descended, budget)
        out = jax.device_get(out)
        seconds = self.clock() - t0
        self.kept = KeptTree(tree, start, actions, inherited=int(out["kept_nodes"][0]))
        result = self._result(pos.state, {k: v[0] for k, v in out.items()}, seconds, child_pvs)
        result = dataclasses.replace(result, reused_visits=int(out["reused_visits"][0]))
        # `visits_for_time` plans with the time a fresh search of `visits` takes: a search that ran at least half of
        # them gives it in proportion (one that ran fewer would mostly time its fixed costs).
        new = result.visits - result.reused_visits
        if new >= max(visits // 2, 1):
            self.search_seconds[(visits, 1)] = seconds * visits / new
        return result

    def search_batch(self, states: Sequence[GameState], visits: int | None = None,
                     batch_size: int | None = None, child_pvs: bool | None = None) -> list[SearchResult]:
        """Searches many positions with one compiled function: batches of `batch_size` (default all),
        the last one padded with copies of its last position.

        child_pvs: fill `MoveStat.pv` for the most-visited root moves (default: not for chess, whose
          notation needs the positions along each PV to be played out on the host)."""
        child_pvs = (not self.game.notation_reads_position) if child_pvs is None else child_pvs
        states = list(states)
        if not states:
            return []
        batch_size = batch_size or len(states)
        visits = int(visits or self.visits)
        spec = self.spec(visits)
        results: list[SearchResult] = []
        for start in range(0, len(states), batch_size):
            chunk = states[start : start + batch_size]
            padded = stack_states(chunk + [chunk[-1]] * (batch_size - len(chunk)))
            self.key, sub = jax.random.split(self.key)
            search = self._executable(spec, sub, padded)
            t0 = self.clock()
            out = jax.device_get(search(self.params, sub, padded))
            seconds = self.clock() - t0
            self.search_seconds[(visits, batch_size)] = seconds
            for i, s in enumerate(chunk):
                results.append(self._result(s, {k: v[i] for k, v in out.items()}, seconds / len(chunk), child_pvs))
        return results

    def _empty_tree(self, spec: SearchSpec, states: GameState) -> Any:
        """A tree of `spec`'s size with nothing to keep, for a first search (made once per size)."""
        if spec not in self._empty_trees:
            self._empty_trees[spec] = empty_search_tree(spec, self.game, self.evaluate, self.params, states)
        return self._empty_trees[spec]

    def _executable(self, spec: SearchSpec, key: jax.Array, states: GameState, *reused: Any) -> Callable[..., Any]:
        """The search for `spec` on batches shaped as `states`, compiled on first use (the time goes to
        `compile_seconds`). With `reused` (the previous tree, of the search's size, the plies from its root, whether
        they descend and the root visits to reach): the search that continues it."""
        cache_key = (spec, self.game, self.evaluate, int(states.current_player.shape[0]))
        if reused:
            cache_key += ("reused",)
        with _EXECUTABLES_LOCK:
            search = _EXECUTABLES.get(cache_key)
            if search is None:
                t0 = self.clock()
                jitted = (_jitted_reused_statistics if reused else _jitted_statistics)(spec, self.game, self.evaluate)
                search = self.compile(jitted, self.params, key, states, *reused)
                self.compile_seconds += self.clock() - t0
                _EXECUTABLES[cache_key] = search
        return search

    def compile(self, fn: Any, *args: Any) -> Callable[..., Any]:
        """The jitted `fn` compiled for `args`' shapes, ahead of the call (JAX's persistent cache serves it too)."""
        return fn.lower(*args).compile()

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
        net_draw = None
        if self.config.value_head == "wdl" and not over:
            net_draw = float(_jitted_draw_probability(self.config, self.game)(self.params, state.observation[None]))
        net_moves_left = None
        if self.config.moves_left_loss_weight > 0 and not over:
            net_moves_left = float(_jitted_moves_left(self.config, self.game)(self.params, state.observation[None]))
        return SearchResult(
            best_move=self.game.action_to_str(state, best) if best >= 0 else "",
            best_action=best,
            value=value,
            root_value=float(out["root_value"]),
            net_value=float(out["net_value"]),
            visits=int(out["n"].sum()),
            stats=stats,
            pv=pv,
            cp=cp_from_q(value) if self.game.is_chess else None,
            seconds=seconds,
            net_draw=net_draw,
            net_moves_left=net_moves_left,
        )

    def pv_strings(self, state: GameState, actions: np.ndarray) -> list[str]:
        """A PV's actions (-1 padded) in the game's notation, stepping the position where the notation
        depends on it (chess). Shapes: actions [L]."""
        out = []
        step = jitted_step(self.game)
        for a in np.asarray(actions):
            a = int(a)
            if a < 0 or bool(state.terminated) or not bool(np.asarray(state.legal_action_mask)[a]):
                break
            out.append(self.game.action_to_str(state, a))
            if self.game.notation_reads_position:
                state = step(state, jnp.int32(a))
        return out

    def genmove(self, visits: int | None = None) -> tuple[str, SearchResult]:
        """Searches the position, plays the chosen move on it and returns (move, search result)."""
        self.position.check_running()
        result = self.search(visits)
        self.position.play_action(result.best_action)
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
