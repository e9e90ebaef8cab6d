"""The loop's seams, and AlphaZero's behaviour as the default of each (docs/methods.md section 0).

A method changes the loop by implementing one or more of these seams; `azjax.build` picks the implementations
from the config, and the loop (`azjax.train.loop`) calls only the seams, with no branch on any method:

  * `ValueHead`: how network outputs become a value, for the search (an evaluator) and for the loss, what
    the loss needs kept per position, and the value term of the loss. AlphaZero: the tanh head as it is, with
    the squared error (`TanhValue`). SAI: the sigmoid in the komi (`azjax.methods.sai.SigmoidKomiValue`).
    Leela Chess Zero: win, draw and loss as three classes, with their cross-entropy
    (`azjax.methods.wdl.WinDrawLossValue`); its moves-left head adjusts the search's values for the plies a
    line is expected to last (`azjax.methods.moves_left.MovesLeftValue`).
  * `GameStarts`: where a restarting slot's game comes from. AlphaZero: `game.init` (`NewGames`). SAI: a komi
    drawn from the empty board's sigmoid, and branch starts queued from finished games (`azjax.methods.sai.KomiStarts`).
    Go-Exploit: a trajectory starts at the initial state with probability lambda, else at a state of an archive
    of visited or searched states (`azjax.methods.go_exploit.ArchiveStarts`). Random openings follow any of
    these starts with a few random moves (`azjax.methods.random_openings.RandomOpenings`).
  * `Targets`: what the replay records per position from the search, how a finished game turns its positions
    into value targets, which positions are trained on, and the value target of a sampled position.
    AlphaZero: the outcome z, or the mix (1 - w) z + w q with the search's value q (`OutcomeTargets`).
    TDLeaf(lambda) records the principal variation's leaf value and forms lambda-returns at game end
    (`azjax.methods.tdleaf.TDLeafTargets`).
  * `SearchPolicy`: how each position of self-play is searched, what the replay keeps as its policy target,
    and which positions are trained on. AlphaZero: one search of the config's budget (`FullSearch`,
    `azjax.search.run_search` over a `SearchSpec`; search-contempt is its `n_scl`), every position trained on.
    KataGo's playout caps search most moves fast and train on the full searches only
    (`azjax.methods.playout_cap.PlayoutCapSearch`).
  * `AuxiliaryTargets`: what else a finished game teaches its positions, through extra heads and loss terms.
    AlphaZero: nothing (`NoAuxiliaryTargets`). KataGo: each point's final ownership and the final score
    margin (`azjax.methods.katago_aux.OwnershipScoreTargets`). Leela Chess Zero: the plies left to the game's
    end (`azjax.methods.moves_left.MovesLeftTargets`).

Per-position records are dicts of [B] arrays, kept in the replay under their names (`Replay.extras`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import mctx

from azjax import replay as rb
from azjax.games import Game, GameState
from azjax.games.augment import augment
from azjax.search import Evaluator, ParentAwareEvaluator, SearchSpec, network_evaluator, policy_value, run_search

Array = jax.Array
Records = dict[str, Array]  # name -> [B] (or [batch] when sampled): what the replay keeps per position
ApplyFn = Callable[..., tuple[Array, ...]]  # the network: (params, observation [B, ...]) -> outputs


@dataclasses.dataclass(frozen=True)
class Seams:
    """The loop's five seams, as `azjax.build.loop_seams` fills them from a config."""

    search: SearchPolicy
    value: ValueHead
    starts: GameStarts
    targets: Targets
    auxiliary: AuxiliaryTargets = dataclasses.field(default_factory=lambda: NoAuxiliaryTargets())


# ---------------------------------------------------------------- the search policy


class Searched(NamedTuple):
    """One move's search of the B games in flight.

    out: mctx's PolicyOutput (`action` [B], `action_weights` [B, A], `search_tree` [B, N nodes]).
    policy_target: float32 [B, A], what the replay keeps as pi (AlphaZero: `out.action_weights`).
    trained: bool [B], the positions SGD may train on (AlphaZero: all).
    """

    out: mctx.PolicyOutput
    policy_target: Array
    trained: Array


class SearchPolicy(Protocol):
    """How self-play searches each position: the search, its policy target and which positions train."""

    spec: SearchSpec  # the full search's settings (the move chooser reads its kind)
    records: tuple[str, ...]  # the names `record` gives
    columns: tuple[str, ...]  # the metrics the method adds to each loop step's row (see `row`)

    def search(self, params: Any, key: Array, states: GameState) -> tuple[Searched, dict[str, Array]]:
        """Searches every position [B]; returns the search and per-move statistics (summed over the step)."""
        ...

    def record(self, searched: Searched) -> Records:
        """What to keep of each searched position (e.g. whether it had the full search)."""
        ...

    def trainable(self, replay: rb.Replay) -> Array:
        """bool [N]: the entries this search policy lets SGD sample (and-ed with the targets' own)."""
        ...

    def row(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """The method's columns of a metrics.csv row from the loop step's metrics (host values)."""
        ...


@dataclasses.dataclass(frozen=True)
class FullSearch:
    """AlphaZero: every position gets the search of `spec` and is trained on with its `action_weights`
    (PUCT: the visit distribution; Gumbel: the improved policy)."""

    spec: SearchSpec
    game: Game
    evaluate: Evaluator | ParentAwareEvaluator
    records: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()

    def search(self, params: Any, key: Array, states: GameState) -> tuple[Searched, dict[str, Array]]:
        out = run_search(self.spec, self.game, self.evaluate, params, key, states)
        return Searched(out, out.action_weights, jnp.ones(out.action.shape, jnp.bool_)), {}

    def record(self, searched: Searched) -> Records:
        del searched
        return {}

    def trainable(self, replay: rb.Replay) -> Array:
        return jnp.ones_like(replay.has_target)

    def row(self, metrics: dict[str, Any]) -> dict[str, Any]:
        del metrics
        return {}


# ---------------------------------------------------------------- the value head


class ValueHead(Protocol):
    """How the network's outputs become a value from the view of the player to move."""

    columns: tuple[str, ...]  # the SGD step's head-health metrics (spread of the head outputs, active units)
    records: tuple[str, ...]  # the names `record` gives

    def evaluator(self, apply_fn: ApplyFn) -> Evaluator | ParentAwareEvaluator:
        """The search's evaluator of the network."""
        ...

    def record(self, states: GameState) -> Records:
        """What the loss needs of each position besides its observation (kept in the replay)."""
        ...

    def train_value(self, outputs: tuple[Array, ...], recorded: Records) -> tuple[Array, Array, dict[str, Array]]:
        """(logits [B, A], value [B] in (-1, 1), spread statistics of the head outputs) for the loss."""
        ...

    def value_loss(self, outputs: tuple[Array, ...], value: Array, target: Array) -> Array:
        """float32 []: the value term of the loss, from the network's `outputs`, the `value` [B] `train_value`
        made of them and the value targets [B] in [-1, 1]."""
        ...


def squared_error(value: Array, target: Array) -> Array:
    """AlphaZero's value loss: the mean of (v - z)^2 over the batch."""
    return jnp.mean((value - target) ** 2)


@dataclasses.dataclass(frozen=True)
class TanhValue:
    """AlphaZero's value head: the network's tanh output is the value."""

    columns: tuple[str, ...] = ("value_std", "policy_head_active", "value_head_active")
    records: tuple[str, ...] = ()

    def evaluator(self, apply_fn: ApplyFn) -> Evaluator:
        return network_evaluator(apply_fn)

    def record(self, states: GameState) -> Records:
        del states
        return {}

    def train_value(self, outputs: tuple[Array, ...], recorded: Records) -> tuple[Array, Array, dict[str, Array]]:
        del recorded
        logits, v = outputs
        return logits, v, {"value_std": jnp.std(v)}

    def value_loss(self, outputs: tuple[Array, ...], value: Array, target: Array) -> Array:
        del outputs
        return squared_error(value, target)


@dataclasses.dataclass(frozen=True)
class ValueHeadWrapper:
    """A value-head seam that is `inner` in every respect; a method that changes one of them (its columns, its
    search evaluator) subclasses it and overrides that one."""

    inner: ValueHead

    @property
    def columns(self) -> tuple[str, ...]:
        return self.inner.columns

    @property
    def records(self) -> tuple[str, ...]:
        return self.inner.records

    def evaluator(self, apply_fn: ApplyFn) -> Evaluator | ParentAwareEvaluator:
        return self.inner.evaluator(apply_fn)

    def record(self, states: GameState) -> Records:
        return self.inner.record(states)

    def train_value(self, outputs: tuple[Array, ...], recorded: Records) -> tuple[Array, Array, dict[str, Array]]:
        return self.inner.train_value(outputs, recorded)

    def value_loss(self, outputs: tuple[Array, ...], value: Array, target: Array) -> Array:
        return self.inner.value_loss(outputs, value, target)


# ---------------------------------------------------------------- game starts


class GameStarts(Protocol):
    """Where the games of the slots come from, at the start and whenever a game ends.

    A method keeps two pieces of state: `slots` (per game slot, [B] leading axis: e.g. SAI's branch points of
    the game in the slot) and `pool` (shared by the device's slots: e.g. SAI's queue of branch starts). Either
    is None when the method needs none.
    """

    columns: tuple[str, ...]  # the metrics the method adds to each loop step's row (see `row`)

    def init(self, key: Array, params: Any, games: GameState, pool_size: int) -> tuple[GameState, Any, Any]:
        """(the first games [B] (from `games`, new games of the game), slots, pool)."""
        ...

    def prepare(self, params: Any) -> Any:
        """Once per loop step, before its moves: what every restart of the step shares (e.g. a net read-out)."""
        ...

    def restart(self, key: Array, params: Any, context: Any, states: GameState, searched: Searched, slots: Any,
                pool: Any, ended: Array) -> tuple[GameState, Any, Any, dict[str, Array]]:
        """The games [B] for the slots whose game `ended` ([B] bool) on this move (rows of other slots are
        ignored), the new slots and pool, and per-move statistics (summed over the step's moves).
        `states` are the positions searched on this move, `searched` their search."""
        ...

    def step_metrics(self, context: Any, pool: Any) -> tuple[dict[str, Array], dict[str, Array]]:
        """(statistics summed over devices, replicated metrics) of one loop step."""
        ...

    def row(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """The method's columns of a metrics.csv row from the loop step's metrics (host values)."""
        ...


@dataclasses.dataclass(frozen=True)
class NewGames:
    """AlphaZero: every game starts at the game's initial position (`game.init`)."""

    game: Game
    columns: tuple[str, ...] = ()

    def init(self, key: Array, params: Any, games: GameState, pool_size: int) -> tuple[GameState, Any, Any]:
        del key, params, pool_size
        return games, None, None

    def prepare(self, params: Any) -> Any:
        del params
        return None

    def restart(self, key: Array, params: Any, context: Any, states: GameState, searched: Searched, slots: Any,
                pool: Any, ended: Array) -> tuple[GameState, Any, Any, dict[str, Array]]:
        del params, context, states, searched
        fresh = jax.vmap(self.game.init)(jax.random.split(key, ended.shape[0]))
        return fresh, slots, pool, {}

    def step_metrics(self, context: Any, pool: Any) -> tuple[dict[str, Array], dict[str, Array]]:
        del context, pool
        return {}, {}

    def row(self, metrics: dict[str, Any]) -> dict[str, Any]:
        del metrics
        return {}


@dataclasses.dataclass(frozen=True)
class GameStartsWrapper:
    """A game-starts seam whose starts are `inner`'s, each then changed by `change` (random openings, odds
    starts); everything else (slots, pool, statistics, columns) is `inner`'s. `change` draws from a key of its
    own (`key_salt` folded in), so the wrapped seam's draws are the same as without the wrapper. Each change
    counts something per game ([B]), summed over the step's new games as the statistic `stat`; the column
    `column` is its mean over them."""

    inner: GameStarts
    key_salt: ClassVar[int]
    stat: ClassVar[str]
    column: ClassVar[str]

    def change(self, key: Array, games: GameState) -> tuple[GameState, Array]:
        """(games [B] changed, what the change counted per game [B])."""
        raise NotImplementedError

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.inner.columns, self.column)

    def init(self, key: Array, params: Any, games: GameState, pool_size: int) -> tuple[GameState, Any, Any]:
        games, slots, pool = self.inner.init(key, params, games, pool_size)
        games, _ = self.change(jax.random.fold_in(key, self.key_salt), games)
        return games, slots, pool

    def prepare(self, params: Any) -> Any:
        return self.inner.prepare(params)

    def restart(self, key: Array, params: Any, context: Any, states: GameState, searched: Searched, slots: Any,
                pool: Any, ended: Array) -> tuple[GameState, Any, Any, dict[str, Array]]:
        games, slots, pool, stats = self.inner.restart(key, params, context, states, searched, slots, pool, ended)
        games, counted = self.change(jax.random.fold_in(key, self.key_salt), games)
        return games, slots, pool, {**stats, self.stat: jnp.where(ended, counted, 0).sum()}

    def step_metrics(self, context: Any, pool: Any) -> tuple[dict[str, Array], dict[str, Array]]:
        return self.inner.step_metrics(context, pool)

    def row(self, metrics: dict[str, Any]) -> dict[str, Any]:
        games = int(metrics["games"])
        mean = int(metrics[self.stat]) / games if games else float("nan")
        return {**self.inner.row(metrics), self.column: mean}


# ---------------------------------------------------------------- targets


class Targets(Protocol):
    """What the replay records from the search, and the value target it yields."""

    records: tuple[str, ...]  # the names `record` gives

    def record(self, searched: Searched, states: GameState, action: Array) -> Records:
        """What to keep of each searched position [B] besides its observation, policy target and player;
        `action` [B] is the move played from it."""
        ...

    def game_ended(self, replay: rb.Replay, ptr: Array, ended: Array, game_id: Array, rewards: Array) -> rb.Replay:
        """Gives the stored positions of the games that `ended` ([B]) their targets (and makes them trainable).
        `ptr`: where this move's positions were written (entries [ptr, ptr + B), the newest)."""
        ...

    def trainable(self, replay: rb.Replay) -> Array:
        """bool [N]: the entries SGD samples from."""
        ...

    def value_target(self, z: Array, recorded: Records) -> Array:
        """float32 [batch]: the value targets of sampled entries from their outcomes z and their records."""
        ...


QKind = Literal["policy", "root"]


def search_q(searched: Searched, kind: QKind) -> Array:
    """float32 [B]: the search's value of each root, the q of q-mixed value targets, from the view of the player
    to move. "policy": the value of the search's policy target (`azjax.search.policy_value`); "root": the
    root's mean backed-up value, which under Gumbel's sequential halving averages over losing moves too."""
    tree = searched.out.search_tree
    if kind == "root":
        return tree.node_values[:, 0]
    return policy_value(tree, searched.policy_target, getattr(searched.out, "moves", None))


@dataclasses.dataclass(frozen=True)
class OutcomeTargets:
    """AlphaZero: the value target is the outcome z; with `q_weight` w > 0 the mix (1 - w) z + w q, q the
    search's value of the position (`search_q` of kind `q`, recorded as `q`)."""

    q_weight: float = 0.0
    # Whether q is recorded and mixed in: q_weight > 0 unless given (a sweep passes it, with q_weight traced).
    mixes_q: bool | None = None
    q: QKind = "policy"

    def __post_init__(self) -> None:
        if self.mixes_q is None:
            object.__setattr__(self, "mixes_q", bool(self.q_weight > 0))

    @property
    def records(self) -> tuple[str, ...]:
        return ("q",) if self.mixes_q else ()

    def record(self, searched: Searched, states: GameState, action: Array) -> Records:
        del states, action
        return {"q": search_q(searched, self.q)} if self.mixes_q else {}

    def game_ended(self, replay: rb.Replay, ptr: Array, ended: Array, game_id: Array, rewards: Array) -> rb.Replay:
        del ptr
        return rb.fill_outcomes(replay, ended, game_id, rewards)

    def trainable(self, replay: rb.Replay) -> Array:
        return replay.has_target

    def value_target(self, z: Array, recorded: Records) -> Array:
        if "q" not in recorded:
            return z
        return mix_with_q(z, recorded["q"], self.q_weight)


def mix_with_q(target: Array, q: Array, q_weight: float) -> Array:
    """The z/q mix (1 - w) target + w q, with `target` the outcome z or a method's replacement for it
    (TDLeaf's lambda-return): one expression, so G = z gives AlphaZero's target bit for bit."""
    return (1.0 - q_weight) * target + q_weight * q


# ---------------------------------------------------------------- auxiliary targets


class AuxiliaryTargets(Protocol):
    """What a finished game teaches its positions besides z (KataGo's auxiliary targets): kept once per game in
    the replay's `finals`, learnt by extra heads of the network with extra loss terms."""

    finals: rb.FinalSpec  # what the replay keeps per game (`Replay.finals`)
    columns: tuple[str, ...]  # the SGD step's metrics the terms add (losses, head health)

    def game_ended(self, replay: rb.Replay, ptr: Array, ended: Array, game_id: Array,
                   final: GameState) -> rb.Replay:
        """Keeps what the games that `ended` ([B]) give their positions; `final`: the positions they ended in;
        `ptr`: the replay index this move's positions were written from (`Targets.game_ended`'s)."""
        ...

    def sample(self, replay: rb.Replay, idx: Array) -> Records:
        """The targets of sampled entries `idx` ([batch]), from the view of each entry's player to move."""
        ...

    def augment(self, game: Game, key: Array, obs: Array, policy: Array,
                targets: Records) -> tuple[Array, Array, Records]:
        """`azjax.games.augment.augment` of a batch, the same symmetry applied to the targets on the board."""
        ...

    def loss(self, predictions: Records, targets: Records) -> tuple[tuple[Array, ...], dict[str, Array]]:
        """(the weighted loss terms added to AlphaZero's loss, their metrics) from the heads' `predictions`
        (`azjax.network.auxiliary_outputs`) and the `targets`."""
        ...


@dataclasses.dataclass(frozen=True)
class NoAuxiliaryTargets:
    """AlphaZero: no auxiliary targets, heads or loss terms."""

    columns: tuple[str, ...] = ()

    @property
    def finals(self) -> rb.FinalSpec:
        return {}

    def game_ended(self, replay: rb.Replay, ptr: Array, ended: Array, game_id: Array,
                   final: GameState) -> rb.Replay:
        del ptr, ended, game_id, final
        return replay

    def sample(self, replay: rb.Replay, idx: Array) -> Records:
        del replay, idx
        return {}

    def augment(self, game: Game, key: Array, obs: Array, policy: Array,
                targets: Records) -> tuple[Array, Array, Records]:
        return (*augment(game, key, obs, policy), targets)

    def loss(self, predictions: Records, targets: Records) -> tuple[tuple[Array, ...], dict[str, Array]]:
        del predictions, targets
        return (), {}
