"""Search-contempt's self-play measures (docs/methods.md section 1) and a temperature self-play agent.

Measures (pure numpy, on a batch of game records):

    w, d, l = wdl(outcomes)                        # outcomes from one fixed side's view (e.g. White)
    ratio = decisive_ratio(w, d, l)                # (w + l) / d; inf if d = 0 < w + l, nan if no games
    frac = repeat_fraction(moves, max_prefix)      # [M]: frac[m-1] for prefixes of m moves
    stats = selfplay_stats(records)                # all of the above from arena.GameRecords

The paper counts w, d, l from White's (the first mover's) view; `first_player_outcomes` converts
`arena.GameRecords` (outcome from agent A's view, A first in rows `a_first`) to that view. Games cut
by a move cap are draws in `arena` (`terminated` False); `SelfPlayStats.unfinished` counts them.

Repeat fraction (the paper's Figure 4): for a prefix length m, the fraction of the N games whose
first m moves equal the first m moves of an EARLIER game in the batch order (so N identical games
give (N - 1) / N, N distinct games 0). Moves are compared as recorded, -1 padding included: a game
that ended after k < m moves repeats an earlier one at length m only if that game is the same
k-move game.

Agent: `temperature_agent(game, evaluate, spec, tau, temperature_moves)` searches with `run_search`
and plays pi(a) ~ N(s0, a)^(1/tau) from the root visit counts (tau = 0: greedy), optionally only for
the first `temperature_moves` moves of a game (then greedy); search-contempt is on when `spec.n_scl`
is not 0. n_scl, tau and the temperature window live in the agent's params
(`SelfPlayParams`), so one compiled self-play program serves every setting of a sweep:
`agent.with_params(selfplay_params(...))` changes them without recompiling (contempt on vs off are
two programs: off is mctx's plain search). Self-play is `arena.play_games(game, agent, agent, ...)`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import Game, GameState
from azjax.play.agents import ActFn, Agent
from azjax.search import Evaluator, SearchSpec, choose_move, run_search

# ---------------------------------------------------------------- measures (numpy)


def wdl(outcomes: np.ndarray) -> tuple[int, int, int]:
    """(wins, draws, losses) of the side whose view `outcomes` ([N], +1 / 0 / -1; sign used) take."""
    o = np.sign(np.asarray(outcomes, np.float64))
    return int((o > 0).sum()), int((o == 0).sum()), int((o < 0).sum())


def decisive_ratio(wins: int, draws: int, losses: int) -> float:
    """(w + l) / d. With no draws: +inf if some game was decisive, nan if there are no games."""
    decisive = wins + losses
    if draws > 0:
        return decisive / draws
    return math.inf if decisive > 0 else math.nan


def repeat_fraction(moves: np.ndarray, max_prefix: int | None = None) -> np.ndarray:
    """float64 [M]: entry m - 1 is the fraction of games whose first m moves repeat an earlier game's.

    Args:
      moves: int [N, max_moves], the actions of each game, -1 after its end (`GameRecords.moves`).
      max_prefix: M, the longest prefix considered (default: all recorded columns).

    The denominator is N (all games); see the module doc for games shorter than m.
    """
    moves = np.asarray(moves)
    if moves.ndim != 2:
        raise ValueError(f"moves must be [N, max_moves], got shape {moves.shape}")
    n, width = moves.shape
    m_max = width if max_prefix is None else int(max_prefix)
    if m_max < 0:
        raise ValueError(f"max_prefix must be >= 0, got {max_prefix}")
    out = np.zeros(m_max, np.float64)
    if n == 0:
        return np.full(m_max, np.nan)
    # Game i repeats at length m iff its m-prefix equals an earlier game's; count = N - #distinct
    # prefixes. Prefix classes refine as m grows, so label them incrementally: (label at m-1, move m).
    labels = np.zeros(n, np.int64)
    for m in range(1, m_max + 1):
        col = moves[:, m - 1] if m <= width else np.full(n, -1, moves.dtype)
        _, labels = np.unique(np.stack([labels, col.astype(np.int64)], axis=1), axis=0, return_inverse=True)
        labels = labels.reshape(-1)
        out[m - 1] = (n - (labels.max() + 1)) / n
    return out


def first_player_outcomes(records: Any) -> np.ndarray:
    """float [N]: each game's outcome for the player who moved first (`arena.GameRecords`)."""
    outcome = np.asarray(records.outcome, np.float64)
    return np.where(np.asarray(records.a_first), outcome, -outcome)


@dataclasses.dataclass(frozen=True)
class SelfPlayStats:
    """Self-play measures of one batch, w / d / l from the first mover's (White's) view.

    Attributes:
      wins, draws, losses: counts (games cut by the move cap are draws).
      unfinished: games cut by the move cap (counted in `draws`).
      decisive_ratio: (w + l) / d (`decisive_ratio`).
      repeat_fraction: [M] (`repeat_fraction`), entry m - 1 for m-move prefixes.
      mean_length: mean plies per game.
    """

    wins: int
    draws: int
    losses: int
    unfinished: int
    decisive_ratio: float
    repeat_fraction: np.ndarray
    mean_length: float

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: inf / nan ratios become the strings 'inf' / 'nan' (strict JSON has neither)."""
        return dict(
            games=self.games, wins=self.wins, draws=self.draws, losses=self.losses, unfinished=self.unfinished,
            decisive_ratio=json_float(self.decisive_ratio), mean_length=self.mean_length,
            repeat_fraction=[float(x) for x in self.repeat_fraction],
        )  # fmt: skip


def json_float(x: float) -> float | str:
    """`x`, or 'inf' / '-inf' / 'nan' for values strict JSON cannot hold."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def selfplay_stats(records: Any, max_prefix: int | None = None, outcomes: np.ndarray | None = None) -> SelfPlayStats:
    """The measures of a self-play batch (`arena.GameRecords`, or anything with its fields).

    Args:
      records: with `outcome`, `a_first`, `moves`, `length`, `terminated` ([N] / [N, max_moves]).
      max_prefix: the longest prefix for `repeat_fraction` (default: every recorded ply).
      outcomes: optional [N] first-mover outcomes overriding the records' (e.g. adjudicated games).
    """
    if outcomes is None:
        outcomes = first_player_outcomes(records)
    wins, draws, losses = wdl(outcomes)
    length = np.asarray(records.length)
    return SelfPlayStats(
        wins=wins, draws=draws, losses=losses,
        unfinished=int((~np.asarray(records.terminated, bool)).sum()),
        decisive_ratio=decisive_ratio(wins, draws, losses),
        repeat_fraction=repeat_fraction(np.asarray(records.moves), max_prefix),
        mean_length=float(length.mean()) if length.size else 0.0,
    )  # fmt: skip


# ---------------------------------------------------------------- temperature self-play agent (jax)

ALWAYS = 2**30  # a temperature window that never closes


@struct.dataclass
class SelfPlayParams:
    """A temperature agent's params: the evaluator's params and the traced settings.

    Attributes:
      evaluator: the evaluator's params (network weights; None for the material evaluator).
      n_scl: int32 []: search-contempt node limit (read only by the contempt program).
      tau: float32 []: move temperature; 0 = greedy.
      temperature_moves: int32 []: tau applies while the game's move number is below this, then greedy.
    """

    evaluator: Any
    n_scl: jax.Array
    tau: jax.Array
    temperature_moves: jax.Array


def selfplay_params(
    evaluator_params: Any, n_scl: int, tau: float, temperature_moves: int | None = None
) -> SelfPlayParams:
    """`SelfPlayParams` from plain values (`temperature_moves=None`: tau for the whole game)."""
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    if n_scl < 0:
        raise ValueError(f"n_scl must be >= 0 (0 = off), got {n_scl}")
    window = ALWAYS if temperature_moves is None else int(temperature_moves)
    return SelfPlayParams(
        evaluator=evaluator_params,
        n_scl=jnp.int32(n_scl),
        tau=jnp.float32(tau),
        temperature_moves=jnp.int32(window),
    )


@functools.cache
def _temperature_act(game: Game, evaluate: Evaluator, spec: SearchSpec, contempt: bool) -> ActFn:
    def act(params: SelfPlayParams, key: jax.Array, states: GameState) -> jax.Array:
        search_key, move_key = jax.random.split(key)
        run_spec = dataclasses.replace(spec, n_scl=params.n_scl if contempt else 0)
        out = run_search(run_spec, game, evaluate, params.evaluator, search_key, states)
        explore = states.move_number < params.temperature_moves
        return choose_move(spec, move_key, out, explore, params.tau)

    return act


def temperature_agent(
    game: Game,
    evaluate: Evaluator,
    spec: SearchSpec,
    tau: float = 0.0,
    temperature_moves: int | None = None,
    params: Any = None,
    name: str | None = None,
) -> Agent:
    """A search agent playing pi(a) ~ N(s0, a)^(1/tau) from its root visits (tau = 0: greedy).

    Args:
      game, evaluate: the game and the evaluator (`(params, states) -> (logits, value)`).
      spec: the search; `spec.n_scl` >= 1 turns search-contempt on (its value can later be changed
        through the params), 0 runs the plain search. Root noise comes from the spec
        (`dirichlet_fraction`); pass 0 for noiseless play.
      tau: move temperature: inside the window the move is drawn from the search's policy target
        pi^(1/tau) (`azjax.search.choose_move`); tau = 0 or outside the window, the search's own choice.
      temperature_moves: tau applies to moves with `state.move_number < temperature_moves` (plies
        since the start position), then greedy; None = the whole game.
      params: the evaluator's params.
      name: label; default e.g. `puct64-scl5-tau1`.

    Returns:
      Agent whose params are `SelfPlayParams`; swap settings with
      `agent.with_params(selfplay_params(evaluator_params, n_scl, tau, temperature_moves))`.
    """
    contempt = spec.n_scl != 0
    act = _temperature_act(game, evaluate, dataclasses.replace(spec, n_scl=0), contempt)
    name = name or f"{spec.kind}{spec.num_simulations}-scl{spec.n_scl if contempt else 'off'}-tau{tau:g}"
    return Agent(name=name, act=act, params=selfplay_params(params, spec.n_scl, tau, temperature_moves))


def step_recorded(game: Game, states: GameState, col: jax.Array) -> GameState:
    """GameState [N]: each game after its recorded move `col` [N]; a game that is over, or whose record has
    ended (-1), stays as it is (rewards included)."""
    stepped = jax.vmap(game.step)(states, jnp.maximum(col, 0))
    keep = (col >= 0) & ~states.terminated
    return jax.tree.map(lambda a, b: jnp.where(keep.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), stepped, states)


@functools.cache
def _replay_fn(game: Game, num_moves: int):
    def replay(key: jax.Array, moves: jax.Array) -> GameState:
        states = jax.vmap(game.init)(jax.random.split(key, moves.shape[0]))
        states, _ = jax.lax.scan(lambda s, col: (step_recorded(game, s, col), None), states, moves.T)
        return states

    return jax.jit(replay)


def replay_moves(game: Game, moves: np.ndarray, key: jax.Array | None = None) -> GameState:
    """GameState [N]: the positions after each game's recorded moves ([N, max_moves], -1 padded).

    Replays from `game.init` (`key` only matters for games whose start is random; pgx chess
    assigns player ids at random, which does not change the position).
    """
    moves = jnp.asarray(moves, jnp.int32)
    key = jax.random.key(0) if key is None else key
    return _replay_fn(game, int(moves.shape[1]))(key, moves)
