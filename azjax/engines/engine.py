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

The searches of one position run in one program compiled per engine setting, whose budget is an input: the
visits are data (a PUCT root's visits to reach, a Gumbel root's simulations with sequential halving's plan), not
shapes, so every budget up to the engine's ceiling (`max_visits`) runs in it and the front ends' time management
never waits for a compile. `prepare` compiles it, with everything a game runs on the host, and times it, before a
GUI's clock starts (UCI's `readyok`, GTP's first command). An analysis grows the tree in chunks of at most
`ANALYSIS_CHUNK` visits (`grow`), so that the next command is answered after at most one chunk. `search_batch`
(many positions) compiles one program per (search spec, batch size). The programs return only the root
statistics to the host (and the tree, kept on the device for the next search to continue or for a proof to be
read out of it), so nothing large crosses to the host unless a mate is proven. Per-move
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
from azjax.engines.clock import SpeedModel, pick_visits, visit_buckets
from azjax.engines.lc0 import MoveStat, SearchResult, cp_from_q
from azjax.engines.mate import ProvenTree, mate_moves, root_mate_plies
from azjax.engines.position import Position, jitted_step, stack_states
from azjax.engines.streaming import analysis_cap
from azjax.games import ODDS_FENS, Game, GameState, check_fen
from azjax.network import with_moves_left
from azjax.search import Evaluator, ParentAwareEvaluator, SearchSpec
from azjax.search.policies import visit_plan
from azjax.search.readout import (
    budgeted_search_statistics,
    empty_search_tree,
    reused_search_statistics,
    search_statistics,
)
from azjax.search.reuse import reusable, subtree

# The most visits one call of an analysis adds (`Engine.grow`): the next command waits for at most this many.
ANALYSIS_CHUNK = 64


@functools.cache
def _jitted_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator):
    return jax.jit(functools.partial(search_statistics, spec, game, evaluate))


@functools.cache
def _jitted_budgeted_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator):
    return jax.jit(functools.partial(budgeted_search_statistics, spec, game, evaluate))


@functools.cache
def _jitted_reused_statistics(spec: SearchSpec, game: Game, evaluate: Evaluator, num_nodes: int):
    return jax.jit(functools.partial(reused_search_statistics, spec, game, evaluate, num_nodes=num_nodes))


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


# The subtree under the moves played re-indexed into a tree of another size (static): only where a search asks for
# more visits than the engine's program holds (a script's), never in the front ends, whose searches share one size.
_jitted_subtree = jax.jit(subtree, static_argnums=(2, 3))


@dataclasses.dataclass(frozen=True)
class KeptTree:
    """The tree of the engine's last search, for the next one to continue (tree reuse).

    Attributes:
      tree: the search tree (device arrays, batch of one).
      start: (komi, start FEN) of the game it was searched in.
      actions: the moves from that start to its root.
      inherited: its nodes [0, inherited) came from the search before (the search evaluated the others).
      nodes: the nodes it holds (those kept and those the search added): no subtree of it holds more.
      visits: its root's child visits.
      plan: a Gumbel analysis in progress (`Engine.grow`): the simulations its root's sequential halving is planned
        for, of which `visits` have run; 0 where the root's search is complete.
    """

    tree: Any
    start: tuple[float, str | None]
    actions: tuple[int, ...]
    inherited: int = 0
    nodes: int = 0
    visits: int = 0
    plan: int = 0

    def plies_to(self, start: tuple[float, str | None], actions: Sequence[int]) -> np.ndarray | None:
        """int32 [1, 2]: the moves (-1 padded) from this tree's root to the position (`start` plus `actions`), when
        that position is the root or one or two moves below it; else None."""
        extra = len(actions) - len(self.actions)
        if start != self.start or not 0 <= extra <= MAX_REUSED_PLIES or tuple(actions[: len(self.actions)]) != \
                self.actions:
            return None
        return np.array([list(actions[len(self.actions) :]) + [-1] * (MAX_REUSED_PLIES - extra)], np.int32)


# (kind, spec, game, evaluate, batch size or tree nodes) -> the search compiled ahead of time, shared by every engine
# of a process (an evaluator is made once per config, so it fixes the parameters' shapes). The lock keeps two
# threads from compiling one search twice.
_EXECUTABLES: dict[tuple[Any, ...], Callable[..., Any]] = {}
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

    Searches are compiled ahead of time, once per engine setting (the budget is an input of the program), and timed
    apart from their compilation by `clock`, so `SearchResult.seconds` (and the nps that UCI reports from it) is the
    search's own time. `prepare` compiles and times everything a game needs before it starts.

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
        from zero). Not with search-contempt, certainty propagation or a parent-aware (SAI) evaluator
        (`azjax.search.reuse` says why): those search afresh. Off: every search is fresh.
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
        self.speed = SpeedModel()  # seconds of a search of the position by its visits (time management)
        self.compile_seconds = 0.0  # spent compiling searches, kept out of `search_seconds`
        self.prepare_seconds = 0.0  # spent in `prepare` (compiling, and the warm-up game)
        self.tree_reuse = bool(tree_reuse)
        self.kept: KeptTree | None = None  # the last search's tree (tree reuse)
        self._empty_trees: dict[tuple[SearchSpec, int], Any] = {}
        self._prepared: tuple[Any, ...] | None = None  # the settings `prepare` last made ready
        self._fresh_analysis: tuple[tuple[float, str | None], tuple[int, ...], int] | None = None

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
        self.kept = None

    def set_twofold_draws(self, on: bool) -> None:
        """Chess: lc0's two-fold draws in the search (docs/methods.md section 11). The kept tree was searched under
        the other rule, so the next search starts afresh."""
        self.config = self.config.replace(twofold_draws=bool(on))
        self.kept = None

    def set_visits(self, visits: int) -> None:
        """The visits of a move without a clock; also the engine's ceiling (`max_visits`) and so its program's size:
        a new value is compiled by the next `prepare` (the kept tree, of the old size, is dropped)."""
        if int(visits) < 1:
            raise ValueError(f"visits must be >= 1, got {visits}")
        if int(visits) != self.visits:
            self.kept = None
        self.visits = int(visits)

    def spec(self, visits: int | None = None) -> SearchSpec:
        return search_spec(self.config, training=False, num_simulations=int(visits or self.visits))

    def set_tree_reuse(self, on: bool) -> None:
        self.tree_reuse = bool(on)
        self.clear_tree()

    def clear_tree(self) -> None:
        """Forgets the kept tree (a new game: lc0 and KataGo start it with an empty tree too)."""
        self.kept = None
        self._fresh_analysis = None

    @property
    def reuses_trees(self) -> bool:
        """Whether `search` continues kept trees: `tree_reuse` is on and the search can (PUCT, no contempt or
        certainty propagation, a plain evaluator)."""
        spec = self.spec()
        return self.tree_reuse and reusable(spec.kind, spec.n_scl, isinstance(self.evaluate, ParentAwareEvaluator),
                                            spec.certainty)

    @property
    def max_visits(self) -> int:
        """The most visits a search of the front ends runs (`go nodes`, an analysis): where searches keep their tree,
        an analysis's ceiling (`azjax.engines.streaming.analysis_cap`: 16 x `visits`, at most MAX_VISITS); else
        `visits` (an analysis that cannot keep its tree searches afresh, up to `visits`). The engine's one program
        runs every budget up to it."""
        return analysis_cap(self.visits) if self.reuses_trees else self.visits

    @property
    def buckets(self) -> tuple[int, ...]:
        """The visits time management picks from (`azjax.engines.clock.visit_buckets`): powers of two, then
        `visits`."""
        return visit_buckets(self.visits)

    def _nodes(self, visits: int) -> int:
        """The nodes of the program (and tree) a search of `visits` runs in: the engine's own, `max_visits` + 1, or
        more where a caller asks for more visits than that (a script; the front ends never do)."""
        return max(self.max_visits, int(visits)) + 1

    # ----- start-up

    def program_key(self) -> tuple[Any, ...]:
        """What the compiled search depends on: a change (`set_visits`, `set_n_scl`, `set_tree_reuse`, ...) needs
        another `prepare`."""
        nodes = self._nodes(self.visits)
        return self.reuses_trees, self.spec(nodes - 1), nodes

    @property
    def prepared(self) -> bool:
        """`prepare` has made the current settings ready: a game compiles nothing more."""
        return self._prepared == self.program_key()

    def prepare(self, warm_up: Callable[[Position], None] | None = None) -> float:
        """Compiles the search the front ends run with the current settings, and runs a short game on a scratch
        position through every host path a game takes (moves, undo, the notation, the read-out of a search and its
        principal variations, the network's extra heads, FEN or komi), so that nothing compiles once a GUI's clock
        runs: JAX compiles a host-side operation the first time it sees its shapes too. The searches are timed
        (1 visit, and `analysis_chunk` visits) for time management (`speed`).

        warm_up: more host paths of a front end, run on the scratch position (after the searches).
        Returns the seconds it took (0 when the settings were ready already). The engine's own position, kept
        tree and PRNG key are as they were."""
        if self.prepared:
            return 0.0
        t0 = self.clock()
        saved = self.position, self.key, self.kept, self._fresh_analysis
        scratch = Position(self.game, self.position.default_start_fen)
        if self.game.is_go:
            scratch.reset(komi=self.position.komi)
        self.position, self.kept, self._fresh_analysis = scratch, None, None
        try:
            self._executable_for(self.visits)  # compiled before anything is timed
            self.search(1, child_pvs=2)  # a program's first call is slower: not timed
            self.speed = SpeedModel()
            # The smallest bucket and one of up to a chunk's visits, each from an empty tree: a fixed cost and a cost
            # per visit (a larger search at start-up would cost its own time; the moves' searches refine the fit).
            for visits in (1, self.analysis_chunk):
                self.kept = None
                self.search(visits)
            self.grow(self.analysis_chunk)
            self.grow(self.analysis_chunk)
            result = self.search(1)
            scratch.play_action(result.best_action)
            if not scratch.is_over:  # a reply below the kept tree: the search that descends
                scratch.play(scratch.legal_moves()[0])
                self.search(1)
                scratch.undo()
            scratch.render()
            scratch.outcome()
            if self.game.has_fen:  # a FEN read and written (a new one: the start positions are cached)
                scratch.set_position([], fen=scratch.fen())
            if self.game.is_go:
                scratch.set_komi(scratch.komi + 1)
                scratch.go_score()
            if warm_up is not None:
                warm_up(scratch)
        finally:
            self.position, self.key, self.kept, self._fresh_analysis = saved
        self._prepared = self.program_key()
        self.prepare_seconds += self.clock() - t0
        return self.clock() - t0

    # ----- search

    @property
    def analysis_chunk(self) -> int:
        """The visits one `grow` call adds: `visits`, at most ANALYSIS_CHUNK."""
        return min(self.visits, ANALYSIS_CHUNK)

    def visits_for_time(self, budget_s: float | None) -> int:
        """The largest of `buckets` whose search, as `speed` predicts it, fits `budget_s` seconds with
        `azjax.engines.clock.SAFETY` to spare (the smallest where none does; `visits` without a budget)."""
        return pick_visits(budget_s, self.speed, self.buckets)

    def search(self, visits: int | None = None, child_pvs: bool | int | None = None) -> SearchResult:
        """Searches the current position (a batch of one) with `visits` (default `visits`), continuing the last
        search's tree where it can (`tree_reuse`).

        child_pvs: fill `MoveStat.pv` for the most visited root moves: True for up to
          `azjax.search.readout.TOP_K_PV` of them, an int for that many (UCI's MultiPV), False for none; default:
          all but for chess, whose notation plays each PV out on the host."""
        visits = int(visits or self.visits)
        t0 = self.clock()
        if self.reuses_trees:
            result = self._search_reusing(visits, child_pvs)
        else:
            result = self._search_fresh(visits, child_pvs)
        self._timed(result, self.clock() - t0)
        return result

    def grow(self, visits: int | None = None, child_pvs: bool | int | None = None) -> SearchResult | None:
        """One step of an analysis of the current position (UCI `go infinite`, GTP `lz-analyze`): `visits` (default
        `analysis_chunk`) more visits in the tree at this position, or None once it has no room for more.

        Where searches keep their tree, the first call starts the analysis from the kept tree (as `search` does)
        and the next ones grow it in place, up to `max_visits` visits: PUCT to a root with `visits` more visits,
        Gumbel by the next `visits` simulations of one sequential halving planned for all the room the tree has.
        Elsewhere each call searches afresh with twice the last call's visits, from `visits` up to the engine's
        `visits`. Either way one call takes one chunk's time, so the next command waits for at most one."""
        visits = int(visits or self.analysis_chunk)
        pos = self.position
        here = ((pos.komi, pos.start_fen), tuple(pos.actions))
        t0 = self.clock()
        if not self.reuses_trees:  # no tree to grow: searches afresh, of doubling size
            last = self._fresh_analysis
            if last is not None and last[:2] == here:
                if last[2] >= self.visits:
                    return None
                visits = min(2 * last[2], self.visits)
            visits = min(visits, self.visits)
            result = self._search_fresh(visits, child_pvs)
            self._fresh_analysis = (*here, visits)
        else:
            kept = self.kept
            if kept is not None and (kept.start, kept.actions) == here:  # in place: is there room for more?
                nodes = self._nodes(self.visits)
                gumbel_done = kept.plan > 0 and kept.visits >= kept.plan
                if (kept.visits + 1 >= nodes) if self.spec().kind == "puct" else (gumbel_done or kept.nodes >= nodes):
                    return None
            result = self._search_reusing(visits, child_pvs, grow=True)
        self._timed(result, self.clock() - t0)
        return result

    def _timed(self, result: SearchResult, seconds: float) -> None:
        """Time management's record of a search that added `result.visits - result.reused_visits` visits."""
        new = result.visits - result.reused_visits
        if new > 0:
            self.speed.observe(new, seconds)
            self.search_seconds[(new, 1)] = seconds

    def _search_fresh(self, visits: int, child_pvs: bool | int | None) -> SearchResult:
        """A search of `visits` from the position alone, in the engine's one program of every budget."""
        pos = self.position
        nodes = self._nodes(visits)
        spec = self.spec(nodes - 1)
        states = stack_states([pos.state])
        self.key, sub = jax.random.split(self.key)
        sims, plan = np.int32(visits), self._plan(spec, visits, nodes - 1)
        program = self._executable("budgeted", spec, nodes, sub, states, sims, plan)
        t0 = self.clock()
        out, tree = program(self.params, sub, states, sims, plan)
        out = jax.device_get(out)
        seconds = self.clock() - t0
        return self._result(pos.state, {k: v[0] for k, v in out.items()}, seconds, child_pvs, tree)

    def _search_reusing(self, visits: int, child_pvs: bool | int | None, grow: bool = False) -> SearchResult:
        """A search of `visits` continuing the kept tree where the position is its root or just below it; with
        `grow` (an analysis, `grow`) one that adds `visits` to the tree at this position instead."""
        pos = self.position
        nodes = self._nodes(visits)
        spec = self.spec(nodes - 1)
        start, actions = (pos.komi, pos.start_fen), tuple(pos.actions)
        states = stack_states([pos.state])
        self.key, sub = jax.random.split(self.key)
        kept = self.kept
        plies = kept.plies_to(start, actions) if kept is not None else None
        if plies is not None and kept.tree.node_visits.shape[1] != nodes:
            # A tree of another size (a script asked for more visits than the engine's ceiling): its subtree moves
            # into one of this search's size, if it fits.
            moved, kept_nodes = _jitted_subtree(kept.tree, plies, nodes, self.game)
            kept = dataclasses.replace(kept, tree=moved, actions=actions, nodes=int(kept_nodes[0]), visits=0, plan=0)
            plies = np.full((1, MAX_REUSED_PLIES), -1, np.int32)
        empty = np.full((1, MAX_REUSED_PLIES), -1, np.int32)
        in_place = plies is not None and bool((plies < 0).all())
        kept_nodes = kept.nodes if plies is not None else 0  # no subtree of the kept tree holds more
        restart = True
        if spec.kind == "puct":
            # The root's visits to reach, the kept ones included (KataGo's maxVisits); growing: `visits` more.
            budget = min((kept.visits + 1 if grow and in_place else 1) + visits, nodes)
            sims, total = visits, 0
        elif grow and in_place and 0 < kept.plan and kept.visits < kept.plan:
            # The analysis in progress: its next simulations, by its plan.
            budget, restart, total = 0, False, kept.plan
            sims = min(visits, total - kept.visits)
        else:
            budget, sims = 0, visits
            total = nodes - 1 - kept_nodes if grow else visits  # growing: a plan for all the room the tree has
            if total < sims:  # too little room below the kept subtree: the analysis starts from an empty tree
                plies, kept_nodes, total = None, 0, nodes - 1 if grow else visits
        if plies is None:  # nothing to continue: an empty tree of this size (the same compiled search)
            previous, plies, descended = self._empty_tree(spec, nodes, states), empty, False
        else:
            previous, descended = kept.tree, not in_place
        plan = self._plan(spec, total, nodes - 1)
        args = (sub, states, previous, plies, np.array([descended]), np.array([budget], np.int32),
                np.array([sims], np.int32), plan, np.array([restart]))
        program = self._executable("reused", spec, nodes, *args)
        t0 = self.clock()
        out, tree = program(self.params, *args)
        out = jax.device_get(out)
        seconds = self.clock() - t0
        row = {k: v[0] for k, v in out.items()}
        result = self._result(pos.state, row, seconds, child_pvs, None)
        result = dataclasses.replace(result, reused_visits=int(row["reused_visits"]))
        inherited = int(row["kept_nodes"])
        new_visits = result.visits - result.reused_visits if spec.kind == "puct" else sims
        self.kept = KeptTree(tree, start, actions, inherited=inherited, nodes=max(inherited, 1) + new_visits,
                             visits=result.visits, plan=total if (grow and spec.kind == "gumbel") else 0)
        return result

    def _plan(self, spec: SearchSpec, simulations: int, width: int) -> np.ndarray:
        """The Gumbel root's plan for `simulations` in a program of `width` simulations (an unused [1, 1] for
        PUCT)."""
        if spec.kind != "gumbel":
            return np.zeros((1, 1), np.int32)
        return visit_plan(spec.max_num_considered_actions, int(simulations), width)

    def search_batch(self, states: Sequence[GameState], visits: int | None = None,
                     batch_size: int | None = None, child_pvs: bool | int | None = None) -> list[SearchResult]:
        """Searches many positions with one compiled function: batches of `batch_size` (default all),
        the last one padded with copies of its last position.

        child_pvs: fill `MoveStat.pv` for the most-visited root moves (default: not for chess, whose
          notation needs the positions along each PV to be played out on the host)."""
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
            search = self._executable("batch", spec, batch_size, sub, padded)
            t0 = self.clock()
            out = jax.device_get(search(self.params, sub, padded))
            seconds = self.clock() - t0
            self.search_seconds[(visits, batch_size)] = seconds
            for i, s in enumerate(chunk):
                results.append(self._result(s, {k: v[i] for k, v in out.items()}, seconds / len(chunk), child_pvs))
        return results

    def _empty_tree(self, spec: SearchSpec, nodes: int, states: GameState) -> Any:
        """A tree of `nodes` nodes with nothing to keep, for a first search (made once per size)."""
        if (spec, nodes) not in self._empty_trees:
            self._empty_trees[(spec, nodes)] = empty_search_tree(spec, self.game, self.evaluate, self.params, states,
                                                                 num_nodes=nodes)
        return self._empty_trees[(spec, nodes)]

    def _executable_for(self, visits: int) -> Callable[..., Any]:
        """The engine's program for a search of `visits` of the position, compiled if it is not yet."""
        pos = self.position
        nodes = self._nodes(visits)
        spec = self.spec(nodes - 1)
        states = stack_states([pos.state])
        key = jax.random.key(0)
        plan = self._plan(spec, min(visits, nodes - 1), nodes - 1)
        if not self.reuses_trees:
            return self._executable("budgeted", spec, nodes, key, states, np.int32(visits), plan)
        one = np.ones(1, bool)
        return self._executable("reused", spec, nodes, key, states, self._empty_tree(spec, nodes, states),
                                np.full((1, MAX_REUSED_PLIES), -1, np.int32), ~one, np.ones(1, np.int32),
                                np.ones(1, np.int32), plan, one)

    def _executable(self, kind: str, spec: SearchSpec, size: int, key: jax.Array, states: GameState,
                    *rest: Any) -> Callable[..., Any]:
        """The search `kind` ("batch": `search_statistics` of a batch of `size`; "budgeted": a budget-as-input
        search in a tree of `size` nodes; "reused": one that continues a kept tree of `size` nodes) for `spec`, on
        the shapes of `key`, `states` and `rest`, compiled on first use (the time goes to `compile_seconds`)."""
        cache_key = (kind, spec, self.game, self.evaluate, size)
        with _EXECUTABLES_LOCK:
            search = _EXECUTABLES.get(cache_key)
            if search is None:
                t0 = self.clock()
                if kind == "batch":
                    jitted = _jitted_statistics(spec, self.game, self.evaluate)
                elif kind == "budgeted":
                    jitted = _jitted_budgeted_statistics(spec, self.game, self.evaluate)
                else:
                    jitted = _jitted_reused_statistics(spec, self.game, self.evaluate, size)
                search = self.compile(jitted, self.params, key, states, *rest)
                self.compile_seconds += self.clock() - t0
                _EXECUTABLES[cache_key] = search
        return search

    def compile(self, fn: Any, *args: Any) -> Callable[..., Any]:
        """The jitted `fn` compiled for `args`' shapes, ahead of the call (JAX's persistent cache serves it too)."""
        return fn.lower(*args).compile()

    def _result(self, state: GameState, out: dict[str, np.ndarray], seconds: float, child_pvs: bool | int | None,
                tree: Any = None) -> SearchResult:
        """The host's `SearchResult` of one position's read-out `out`; `tree` (device arrays, batch of one; where
        the search propagated certainty) is read for mate distances where a root move is proven."""
        if child_pvs is None or isinstance(child_pvs, bool):
            every = child_pvs if child_pvs is not None else not self.game.notation_reads_position
            child_pvs = len(out["top"]) if every else 0
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        over = bool(state.terminated) or legal.size == 0
        top_pv = {int(a): out["top_pv"][j] for j, a in enumerate(out["top"][: int(child_pvs)])}
        mates = {} if over else self._mates(out, tree)
        stats = []
        for a in ([] if over else legal):
            a = int(a)
            pv = self.pv_strings(state, top_pv[a]) if a in top_pv and out["n"][a] > 0 else []
            stats.append(MoveStat(
                move=self.game.action_to_str(state, a), action=a, n=int(out["n"][a]), p=float(out["p"][a]),
                q=float(out["q"][a]), u=float(out["u"][a]),
                v=float(out["v"][a]) if out["expanded"][a] else None, pv=pv, mate=mates.get(a)))
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
        depth = float(out["depth"]) if "depth" in out else 0.0
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
            depth=depth,
            seldepth=int(out["seldepth"]) if "seldepth" in out else 0,
            mate=mates.get(best),
        )

    def _mates(self, out: dict[str, np.ndarray], tree: Any) -> dict[int, int]:
        """{action: UCI mate N} for the root moves whose result the search proved: from the proven subtree where it
        propagated certainty (`azjax.engines.mate`), else a move that mates at once (a terminal child worth 1)."""
        proven = "lower" in out and tree is not None and bool(((out["lower"] >= 1) | (out["upper"] <= -1)).any())
        if proven:
            plies = root_mate_plies(ProvenTree.of(tree))
            slots = out.get("slots")
            return {int(slots[s]) if slots is not None else s: mate_moves(p) for s, p in plies.items()}
        return {int(a): 1 for a in np.flatnonzero(out["ends"] & (out["reward"] >= 1))}

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
