"""Pascal Pons' Connect Four test sets: load them, set the positions up on device, grade moves.

    sets = load_pons("connect_four_pons.jsonl")              # {"begin_hard": PonsSet, ...}
    states = replay_moves(game, sets["begin_hard"].moves)     # GameState [N] (azjax.play.selfplay_stats)
    grade = grade_agent(game, agent, sets["begin_hard"], key) # every position searched in one batch
    value_by_result(values, sets["begin_hard"].score)         # does a value [N] know the results?

Each line of the file is `{"set": ..., "moves": "4453", "score": s, "move_scores": {"1": s1, ..., "7": s7}}`:
the moves from the empty board as columns 1-7 (leftmost = 1, pgx's action 0), and the perfect-play
score of each legal move for the side to move (null = column full). Grading follows AlphaZero.jl's
table: a move is an *error* when it changes the game-theoretic result, sign(score of the move) !=
sign(best score); it is *not optimal* when its score is below the best (e.g. a slower win). An
illegal move counts as both.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from azjax.games import Game
from azjax.play.agents import Agent
from azjax.play.arena import wilson_interval
from azjax.play.selfplay_stats import replay_moves
from azjax.play.tournament import jit_act  # one jitted act per agent, shared with the arena

# Pons' six sets, shipped inside the package (azjax/data/README.md: source, format); scripts take --data.
PONS_DATA = str(Path(__file__).resolve().parents[1] / "data" / "connect_four_pons.jsonl")
PONS_SETS = ("begin_easy", "begin_medium", "begin_hard", "middle_easy", "middle_medium", "end_easy")
COLUMNS = 7
MAX_PLIES = 42


@dataclasses.dataclass(frozen=True)
class PonsSet:
    """One test set.

    Attributes:
      name: e.g. "begin_hard".
      moves: int32 [N, 42]: each position's moves from the empty board as pgx actions (column - 1),
        -1 after its last move.
      move_scores: float64 [N, 7]: the perfect-play score of each column for the side to move, NaN for a
        full column.
      score: int64 [N]: the position's score for the side to move (= the best move's score).
    """

    name: str
    moves: np.ndarray
    move_scores: np.ndarray
    score: np.ndarray

    @property
    def size(self) -> int:
        return int(self.moves.shape[0])


def load_pons(path: str | Path | None, sets: Sequence[str] | None = None,
              limit: int | None = None) -> dict[str, PonsSet]:
    """The test sets of a Pons JSONL file, in file order within each set.

    Args:
      path: the JSONL file; None reads the copy shipped in the package (`PONS_DATA`), so that a script's recorded
        arguments name no path of the machine it ran on.
      sets: the set names to keep (default: all present, in `PONS_SETS` order first).
      limit: keep at most the first `limit` positions of each set.
    """
    rows: dict[str, list[dict[str, Any]]] = {}
    for line in Path(PONS_DATA if path is None else path).read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            rows.setdefault(rec["set"], []).append(rec)
    names = list(sets) if sets is not None else sorted(rows, key=lambda s: (PONS_SETS + (s,)).index(s))
    out = {}
    for name in names:
        if name not in rows:
            raise ValueError(f"no set {name!r} in {path} (it has {', '.join(rows)})")
        recs = rows[name][:limit]
        moves = np.full((len(recs), MAX_PLIES), -1, np.int32)
        scores = np.full((len(recs), COLUMNS), np.nan)
        for i, rec in enumerate(recs):
            cols = [int(c) - 1 for c in rec["moves"]]
            moves[i, : len(cols)] = cols
            for col, s in rec["move_scores"].items():
                if s is not None:
                    scores[i, int(col) - 1] = s
        out[name] = PonsSet(name=name, moves=moves, move_scores=scores,
                            score=np.array([rec["score"] for rec in recs], np.int64))
    return out


# ---------------------------------------------------------------- grading


def grade_moves(actions: np.ndarray, move_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(errors, not_optimal), bool [N] each, for the chosen `actions` (int [N]) of positions with
    `move_scores` (float [N, 7], NaN = illegal): error = the move changes the game-theoretic result
    (sign of its score != sign of the best score), not optimal = its score is below the best."""
    actions = np.asarray(actions, np.int64)
    scores = np.asarray(move_scores, np.float64)
    best = np.nanmax(scores, axis=1)
    rows = np.arange(len(actions))
    inside = (actions >= 0) & (actions < scores.shape[1])
    chosen = np.where(inside, scores[rows, np.clip(actions, 0, scores.shape[1] - 1)], np.nan)
    illegal = np.isnan(chosen)
    errors = illegal | (np.sign(np.nan_to_num(chosen)) != np.sign(best))
    not_optimal = illegal | (np.nan_to_num(chosen, nan=-np.inf) < best)
    return errors, not_optimal


# A perfect-play result by the sign of its score for the side to move.
RESULT_SIGNS = (("win", 1), ("draw", 0), ("loss", -1))


@dataclasses.dataclass(frozen=True)
class PonsGrade:
    """An agent's grade on one set; rates come with 95% Wilson intervals (`arena.wilson_interval`).

    `by_result` splits positions and errors by the position's perfect-play result for the side to move
    ("win", "draw", "loss"; {result: (positions, errors)}): a won position's error gives the win away, a
    drawn one's loses, and a lost position has none (every legal move loses).
    """

    set: str
    positions: int
    errors: int
    not_optimal: int
    seconds: float = 0.0
    by_result: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    @property
    def error_rate(self) -> float:
        return self.errors / max(self.positions, 1)

    @property
    def not_optimal_rate(self) -> float:
        return self.not_optimal / max(self.positions, 1)

    def to_dict(self) -> dict[str, Any]:
        e_low, e_high = wilson_interval(self.error_rate, self.positions)
        o_low, o_high = wilson_interval(self.not_optimal_rate, self.positions)
        return dict(set=self.set, positions=self.positions, errors=self.errors, error_rate=self.error_rate,
                    error_low=e_low, error_high=e_high, not_optimal=self.not_optimal,
                    not_optimal_rate=self.not_optimal_rate, not_optimal_low=o_low, not_optimal_high=o_high,
                    seconds=self.seconds,
                    by_result={r: dict(positions=n, errors=e, error_rate=e / n if n else None)
                               for r, (n, e) in self.by_result.items()})

    def __str__(self) -> str:
        d = self.to_dict()
        return (f"{self.set:>14}: {self.errors:4d}/{self.positions} errors = {100 * d['error_rate']:5.1f}% "
                f"[{100 * d['error_low']:.1f}, {100 * d['error_high']:.1f}]  not optimal "
                f"{100 * d['not_optimal_rate']:5.1f}%  ({self.seconds:.1f}s)")


def agent_moves(
    game: Game, agent: Agent, moves: np.ndarray, key: jax.Array, batch_size: int | None = None
) -> np.ndarray:
    """int32 [N]: the agent's move in each position given by `moves` (int [N, L]: pgx actions from the
    start, -1 after the last; `azjax.play.selfplay_stats.replay_moves` sets them up on device).

    Positions go through `agent.act` in batches of `batch_size` (default: all N at once); the last
    batch is padded to full size so that every batch runs the same compiled program.
    """
    n = int(moves.shape[0])
    size = min(batch_size or n, n)
    out = []
    for lo in range(0, n, size):
        chunk = moves[lo : lo + size]
        if len(chunk) < size:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], size - len(chunk), axis=0)])
        key, sub = jax.random.split(key)
        states = replay_moves(game, chunk)  # all positions at once: a scan over plies
        out.append(np.asarray(jit_act(agent.act)(agent.params, sub, states))[: min(size, n - lo)])
    return np.concatenate(out).astype(np.int32)


def grade_agent(
    game: Game, agent: Agent, pons_set: PonsSet, key: jax.Array, batch_size: int | None = None
) -> PonsGrade:
    """Grades the agent's move in every position of `pons_set` (see `agent_moves`, `grade_moves`)."""
    t0 = time.perf_counter()
    actions = agent_moves(game, agent, pons_set.moves, key, batch_size)
    errors, not_optimal = grade_moves(actions, pons_set.move_scores)
    result = np.sign(pons_set.score)
    by_result = {name: (int((result == sign).sum()), int(errors[result == sign].sum()))
                 for name, sign in RESULT_SIGNS}
    return PonsGrade(set=pons_set.name, positions=pons_set.size, errors=int(errors.sum()),
                     not_optimal=int(not_optimal.sum()), seconds=round(time.perf_counter() - t0, 2),
                     by_result=by_result)


def value_by_result(values: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    """How well position values (float [N], side to move, in [-1, 1]) tell Pons' game-theoretic results apart.

    `score` (int [N]) is each position's perfect-play score for the side to move; its sign is the result.
    Returns per result ("win", "draw", "loss") the positions and their values' mean and standard deviation,
    and `win_loss_auc`: the probability that a won position has a higher value than a lost one (ties count
    one half), 0.5 for a network that gives every position the same value, 1 for one that orders them all.
    """
    values, result = np.asarray(values, np.float64), np.sign(np.asarray(score))
    by_result = {}
    for name, sign in RESULT_SIGNS:
        v = values[result == sign]
        by_result[name] = dict(positions=int(v.size), mean=float(v.mean()) if v.size else None,
                               sd=float(v.std()) if v.size else None)
    wins, losses = values[result > 0], values[result < 0]
    auc = None
    if wins.size and losses.size:
        above = (wins[:, None] > losses[None, :]).mean()
        ties = (wins[:, None] == losses[None, :]).mean()
        auc = float(above + ties / 2)
    return dict(by_result=by_result, win_loss_auc=auc)
