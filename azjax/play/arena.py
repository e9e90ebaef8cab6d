"""Arena: batched games between two agents, match statistics and Elo.

    records = play_games(game, agent_a, agent_b, key, num_games)    # one jitted batch
    result = match(game, agent_a, agent_b, num_games, key)           # batches + statistics
    fit = fit_elo(names, [(a, b, points_of_a, games), ...])          # round-robin ratings

`play_games` puts A first in the first half of the batch and B first in the second half, so at
every ply each agent moves in exactly one half: each agent is called once per ply on [N/2] games.
All games supported here alternate strictly (Connect Four, Go with passes as moves, chess), so the
mover of every game follows from the ply's parity. The jitted function is cached per (game, A's
`act`, B's `act`, number of games) and takes the agents' `params` as arguments, so evaluating new
weights never recompiles.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import Game, GameState
from azjax.play.agents import ActFn, Agent

ELO_SCALE = 400.0 / math.log(10.0)  # Elo points per natural-log odds unit
Z95 = 1.959963984540054


@struct.dataclass
class GameRecords:
    """A batch of finished (or `max_moves`-capped) games; every field has leading axis [N].

    Attributes:
      outcome: float32 [N]: result for agent A (+1 win, 0 draw, -1 loss).
      length: int32 [N]: plies played.
      moves: int32 [N, max_moves]: the actions played, -1 after the game's end.
      a_first: bool [N]: whether A made the first move (True in the first half).
      terminated: bool [N]: False for games stopped by a cap: `max_plies`, or the game's `max_moves` (Go: scored
        by area where the cap stopped them; other games: draws).
      illegal: bool [N]: an agent played an illegal move (pgx ends the game: the offender loses).
    """

    outcome: jax.Array
    length: jax.Array
    moves: jax.Array
    a_first: jax.Array
    terminated: jax.Array
    illegal: jax.Array


def _select(cond: jax.Array, a: Any, b: Any) -> Any:
    """`a` where the scalar `cond` holds, else `b`, leaf by leaf."""
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


def play_from(game: Game, act_a: ActFn, act_b: ActFn, params_a: Any, params_b: Any, key: jax.Array,
              states: GameState, max_plies: jax.Array | int) -> tuple[GameRecords, GameState]:
    """The one batched game loop of matches: plays from `states` [N] until every game is over or `max_plies`
    (at most the game's `max_moves`) plies are played. Rows [0, N/2) have A to move first, rows [N/2, N) B.

    Returns the records (moves from the start states) and the final states [N].
    """
    num_games = states.current_player.shape[0]
    half = num_games // 2
    a_first = jnp.arange(num_games) < half
    # pgx assigns player ids to seats at random; A owns the id that moves first in its half.
    first_id = states.current_player
    a_id = jnp.where(a_first, first_id, 1 - first_id)
    moves = jnp.full((num_games, game.max_moves), -1, jnp.int32)

    def halves(s: GameState) -> tuple[GameState, GameState]:
        return jax.tree.map(lambda x: x[:half], s), jax.tree.map(lambda x: x[half:], s)

    def cond(carry: tuple) -> jax.Array:
        ply, _, states, *_ = carry
        return (ply < jnp.minimum(max_plies, game.max_moves)) & ~jnp.all(states.terminated)

    def body(carry: tuple) -> tuple:
        ply, key, states, moves, outcome, length, illegal = carry
        key, key_a, key_b = jax.random.split(key, 3)
        first, second = halves(states)
        a_in_first = ply % 2 == 0  # A moves in the first half on even plies, in the second on odd
        actions_a = act_a(params_a, key_a, _select(a_in_first, first, second))
        actions_b = act_b(params_b, key_b, _select(a_in_first, second, first))
        actions = jnp.concatenate(
            [jnp.where(a_in_first, actions_a, actions_b), jnp.where(a_in_first, actions_b, actions_a)]
        ).astype(jnp.int32)
        live = ~states.terminated
        illegal = illegal | (live & ~jnp.take_along_axis(states.legal_action_mask, actions[:, None], axis=1)[:, 0])
        states = jax.vmap(game.step)(states, actions)
        reward_a = jnp.take_along_axis(states.rewards, a_id[:, None], axis=1)[:, 0]
        outcome = outcome + jnp.where(live, reward_a, 0.0)
        moves = moves.at[:, ply].set(jnp.where(live, actions, -1))
        return ply + 1, key, states, moves, outcome, length + live.astype(jnp.int32), illegal

    carry = (jnp.int32(0), key, states, moves, jnp.zeros(num_games, jnp.float32), jnp.zeros(num_games, jnp.int32),
             jnp.zeros(num_games, bool))
    _, _, states, moves, outcome, length, illegal = jax.lax.while_loop(cond, body, carry)
    # pgx ends a Go game at its move cap like a finished one: such a game is cut short, not finished.
    finished = states.terminated & ~jax.vmap(game.cut_short)(states)
    records = GameRecords(outcome=outcome, length=length, moves=moves, a_first=a_first, terminated=finished,
                          illegal=illegal)
    return records, states


def _play(game: Game, act_a: ActFn, act_b: ActFn, num_games: int, params_a: Any, params_b: Any,
          key: jax.Array, komi: jax.Array) -> GameRecords:
    """Plays `num_games` new games with `komi` (`play_from` the game's start): rows [0, N/2) with A first."""
    init_key, key = jax.random.split(key)
    states = jax.vmap(game.init, (0, None))(jax.random.split(init_key, num_games), komi)
    records, _ = play_from(game, act_a, act_b, params_a, params_b, key, states, game.max_moves)
    return records


play_jit = jax.jit(_play, static_argnums=(0, 1, 2, 3))


def play_games(game: Game, agent_a: Agent, agent_b: Agent, key: jax.Array, num_games: int,
               komi: float | None = None) -> GameRecords:
    """Plays `num_games` (even) games between A and B in one jitted batch, colours alternating.

    Compiled once per (game, A's `act`, B's `act`, num_games); the agents' params and `komi` (Go: the
    games' komi, default the game's own) are arguments, so a komi sweep compiles once.

    Returns:
      GameRecords [num_games]: rows [0, num_games / 2) have A moving first.
    """
    if num_games < 2 or num_games % 2:
        raise ValueError(f"num_games must be even and >= 2, got {num_games}")
    komi = game.komi if komi is None else game.check_komi(komi)
    return play_jit(game, agent_a.act, agent_b.act, num_games, agent_a.params, agent_b.params, key, komi)


# ---------------------------------------------------------------- statistics


def elo_from_score(score: float | np.ndarray, clip: float = 1e-3) -> float | np.ndarray:
    """Elo difference for an expected score (logistic, 400-point scale): 400 log10(s / (1 - s)).

    The score is clipped to [clip, 1 - clip] (default: at most +-1200 Elo) so 0 and 1 stay finite.
    """
    s = np.clip(np.asarray(score, np.float64), clip, 1.0 - clip)
    elo = ELO_SCALE * np.log(s / (1.0 - s))
    return float(elo) if elo.ndim == 0 else elo


def score_from_elo(elo: float | np.ndarray) -> float | np.ndarray:
    """Expected score for an Elo difference: 1 / (1 + 10^(-elo / 400))."""
    s = 1.0 / (1.0 + np.power(10.0, -np.asarray(elo, np.float64) / 400.0))
    return float(s) if s.ndim == 0 else s


def t_interval(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """(mean, low, high): the mean of independent runs (seeds) with a 95% Student-t interval (None, None
    from one value)."""
    from scipy import stats

    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None, None
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def wilson_interval(score: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a score in [0, 1] over `n` games (draws count as half points).

    Treats every game as a Bernoulli trial with mean `score`; with draws the true per-game variance
    is smaller, so the interval is conservative. It always contains `score` and stays inside [0, 1].
    """
    if n <= 0:
        return 0.0, 1.0
    z2 = z * z
    centre = (score + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(max(score * (1 - score), 0.0) / n + z2 / (4 * n * n))
    return max(0.0, min(centre - half, score)), min(1.0, max(centre + half, score))  # exact despite rounding


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """A match from agent A's view.

        `score` = (wins + draws / 2) / games; [`score_low`, `score_high`] is its 95% Wilson interval
        (`wilson_interval`); `elo` = `elo_from_score(score)` with [`elo_low`, `elo_high`] the interval's
        ends mapped the same way. `first_score` is A's score in the games where A moved first; `illegal`
    counts games ended by an illegal move, `unfinished` games cut short by a cap (Go: scored by area where they
    stopped; other games: draws).
    """

    name_a: str
    name_b: str
    wins: int
    draws: int
    losses: int
    first_score: float
    mean_length: float
    illegal: int = 0
    unfinished: int = 0
    records: GameRecords | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    @property
    def score_interval(self) -> tuple[float, float]:
        return wilson_interval(self.score, self.games)

    @property
    def elo(self) -> float:
        return elo_from_score(self.score)

    @property
    def elo_interval(self) -> tuple[float, float]:
        low, high = self.score_interval
        return elo_from_score(low), elo_from_score(high)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no game records)."""
        s_low, s_high = self.score_interval
        e_low, e_high = self.elo_interval
        return dict(
            name_a=self.name_a, name_b=self.name_b, games=self.games, wins=self.wins, draws=self.draws,
            losses=self.losses, score=self.score, score_low=s_low, score_high=s_high, elo=self.elo,
            elo_low=e_low, elo_high=e_high, first_score=self.first_score, mean_length=self.mean_length,
            illegal=self.illegal, unfinished=self.unfinished,
        )  # fmt: skip

    def __str__(self) -> str:
        s_low, s_high = self.score_interval
        return (
            f"{self.name_a} vs {self.name_b}: +{self.wins} ={self.draws} -{self.losses} "
            f"score {self.score:.3f} [{s_low:.3f}, {s_high:.3f}] elo {self.elo:+.0f}"
        )


def summarize(records: GameRecords, name_a: str = "A", name_b: str = "B") -> MatchResult:
    """Counts wins, draws and losses of A in `records` (host-side)."""
    r = jax.tree.map(np.asarray, records)
    outcome = np.sign(r.outcome)
    first = outcome[r.a_first]
    return MatchResult(
        name_a=name_a,
        name_b=name_b,
        wins=int((outcome > 0).sum()),
        draws=int((outcome == 0).sum()),
        losses=int((outcome < 0).sum()),
        first_score=float(((first + 1) / 2).mean()) if first.size else float("nan"),
        mean_length=float(r.length.mean()) if r.length.size else 0.0,
        illegal=int(r.illegal.sum()),
        unfinished=int((~r.terminated).sum()),
        records=r,
    )


def match(
    game: Game,
    agent_a: Agent,
    agent_b: Agent,
    num_games: int,
    key: jax.Array,
    batch_size: int | None = None,
) -> MatchResult:
    """Plays `num_games` (even) games in batches of `batch_size` (even; default all at once).

    Every batch has the same size (one compilation); a last partial batch keeps equally many games
    from each colour half. Returns A's result, with the concatenated `GameRecords` in `.records`.
    """
    batch_size = batch_size or num_games
    if num_games < 2 or num_games % 2 or batch_size % 2:
        raise ValueError(f"num_games and batch_size must be even, got {num_games} and {batch_size}")
    batch_size = min(batch_size, num_games)
    parts = []
    remaining = num_games
    while remaining > 0:
        key, sub = jax.random.split(key)
        records = jax.tree.map(np.asarray, play_games(game, agent_a, agent_b, sub, batch_size))
        keep = min(remaining, batch_size) // 2
        rows = np.r_[0:keep, batch_size // 2 : batch_size // 2 + keep]
        parts.append(jax.tree.map(lambda x, rows=rows: x[rows], records))
        remaining -= 2 * keep
    records = jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
    return summarize(records, agent_a.name, agent_b.name)


# ---------------------------------------------------------------- Elo fit (Bradley-Terry)


@dataclasses.dataclass(frozen=True)
class EloFit:
    """Maximum-likelihood ratings; `stderr` from the observed Fisher information (0 for the anchor)."""

    ratings: dict[str, float]
    stderr: dict[str, float]
    anchor: str
    iterations: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def fit_elo(
    names: Sequence[str],
    results: Sequence[tuple[str, str, float, float]],
    anchor: str | None = None,
    anchor_rating: float = 0.0,
    prior_draws: float = 0.0,
    max_iterations: int = 100,
    tol: float = 1e-10,
) -> EloFit:
    """Bradley-Terry (logistic Elo) ratings by maximum likelihood, with Newton's method.

    Model: P(i scores against j) = 1 / (1 + 10^((r_j - r_i) / 400)); a draw counts as half a win
    and half a loss. Ratings are anchored: `anchor` (default `names[0]`) is fixed at `anchor_rating`.

    Args:
      names: the players.
      results: (player a, player b, points scored by a, games) per pairing; repeated pairs add up.
      anchor: the player whose rating is fixed.
      anchor_rating: its rating.
      prior_draws: virtual draws added to every observed pairing (regularises perfect scores, whose
        maximum-likelihood ratings are infinite); 0 = plain maximum likelihood.
      max_iterations, tol: Newton's stopping rule (max absolute step in log-odds units).

    Returns:
      EloFit with ratings and standard errors (inverse observed information of the free ratings).
    """
    names = list(names)
    index = {n: i for i, n in enumerate(names)}
    if len(index) != len(names):
        raise ValueError("duplicate player names")
    anchor = names[0] if anchor is None else anchor
    if anchor not in index:
        raise ValueError(f"unknown anchor {anchor!r}")
    k = len(names)
    points = np.zeros((k, k))  # points[i, j]: points i scored against j
    games = np.zeros((k, k))
    for a, b, pts, n in results:
        if a not in index or b not in index:
            raise ValueError(f"unknown player in result {(a, b)!r}")
        if a == b:
            raise ValueError(f"a player cannot play itself: {a!r}")
        if not 0 <= pts <= n:
            raise ValueError(f"points must lie in [0, games], got {pts} of {n} for {(a, b)!r}")
        i, j = index[a], index[b]
        points[i, j] += pts
        points[j, i] += n - pts
        games[i, j] += n
        games[j, i] += n
    played = games > 0
    _check_connected(played, index[anchor], names)
    points = points + np.where(played, prior_draws / 2, 0.0)
    games = games + np.where(played, prior_draws, 0.0)

    free = np.array([i for i in range(k) if names[i] != anchor], dtype=np.int64)
    theta = np.zeros(k)  # log-odds units; the anchor stays at 0
    iterations = 0
    info = np.zeros((len(free), len(free)))
    while iterations < max_iterations:
        iterations += 1
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j] = P(i beats j)
        grad = (points - games * p).sum(axis=1)
        w = games * p * (1 - p)
        fisher = np.diag(w.sum(axis=1)) - w  # observed information (a graph Laplacian)
        info = fisher[np.ix_(free, free)]
        step = np.linalg.solve(info, grad[free])
        step = np.clip(step, -2.0, 2.0)  # damped: perfect scores drift instead of overflowing
        theta[free] += step
        if np.max(np.abs(step), initial=0.0) < tol:
            break
    cov = np.linalg.inv(info) if len(free) else np.zeros((0, 0))
    se = np.zeros(k)
    se[free] = np.sqrt(np.maximum(np.diag(cov), 0.0)) * ELO_SCALE
    ratings = theta * ELO_SCALE + anchor_rating
    return EloFit(
        ratings={n: float(ratings[i]) for i, n in enumerate(names)},
        stderr={n: float(se[i]) for i, n in enumerate(names)},
        anchor=anchor,
        iterations=iterations,
    )


def _check_connected(played: np.ndarray, start: int, names: list[str]) -> None:
    """Raises ValueError unless the graph of pairings that were played links everyone to `start`."""
    seen = np.zeros(len(names), bool)
    seen[start] = True
    frontier = [start]
    while frontier:
        i = frontier.pop()
        for j in np.flatnonzero(played[i] & ~seen):
            seen[j] = True
            frontier.append(int(j))
    if not seen.all():
        missing = ", ".join(n for n, s in zip(names, seen, strict=True) if not s)
        raise ValueError(f"no chain of games links these players to the anchor: {missing}")


def round_robin_results(results: Sequence[MatchResult]) -> list[tuple[str, str, float, float]]:
    """`fit_elo`'s (a, b, points of a, games) tuples from match results."""
    return [(r.name_a, r.name_b, r.wins + 0.5 * r.draws, float(r.games)) for r in results]
