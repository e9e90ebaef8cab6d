"""Leela Chess Zero's conventions for a finished search (docs/methods.md section 5), on the host: the per-move
statistics (`MoveStat`, `SearchResult`), their verbose table (`format_table`), centipawns from Q (`cp_from_q`) and
the win/draw/loss triple of UCI_ShowWDL (`wdl_from_q`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

CP_SCALE, CP_ANGLE = 111.714640912, 1.5620688421


def cp_from_q(q: float) -> float:
    """lc0's centipawn mapping of Q in [-1, 1] (docs/methods.md section 5)."""
    q = max(-1.0, min(1.0, float(q)))
    return CP_SCALE * math.tan(CP_ANGLE * q)


def wdl_from_q(q: float, draw: float = 0.0) -> tuple[int, int, int]:
    """(win, draw, loss) per mille, summing to 1000, from Q in [-1, 1] (the player to move's view) and a draw share.

    Without a draw share (a tanh or SAI head: no draw class), as lc0 reports a network without a WDL head: D = 0,
    W = (1 + Q) / 2 and L = (1 - Q) / 2. With a win/draw/loss head, `draw` is the network's draw probability at the
    root (azjax's search backs up Q alone, where lc0 also backs up D); it is capped at 1 - |Q|, the most a score of
    Q allows, and W = (1 + Q - D) / 2, L = (1 - Q - D) / 2, so W - L is still Q.

        wdl_from_q(0.2) == (600, 0, 400)
        wdl_from_q(0.2, draw=0.5) == (350, 500, 150)
    """
    q = max(-1.0, min(1.0, float(q)))
    d = max(0.0, min(float(draw), 1.0 - abs(q)))
    win = int(round(500 * (1 + q - d)))
    drawn = int(round(1000 * d))
    drawn = min(drawn, 1000 - win)
    return win, drawn, 1000 - win - drawn


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
    mate: int | None = None  # UCI's mate N after this move, where the search proved its result (`azjax.engines.mate`)

    @property
    def q_plus_u(self) -> float:
        return self.q + self.u

    def to_dict(self) -> dict[str, Any]:
        return dict(move=self.move, action=self.action, N=self.n, P=self.p, Q=self.q, U=self.u,
                    QU=self.q_plus_u, V=self.v, pv=self.pv, mate=self.mate)


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
      reused_visits: of `visits`, those the search started with (tree reuse: the subtree kept from the last search).
      net_draw: the network's draw probability at the root where it has a win/draw/loss head, else None.
      net_moves_left: the plies the network's moves-left head predicts at the root where it has one, else None.
      depth, seldepth: the mean and the greatest depth of the tree's nodes below the root (lc0's `depth` and
        `seldepth`: each node was a simulation's leaf), past the end of a game not counted.
      mate: UCI's `mate N` of the chosen move where the search proved the game's result (N moves of the side to
        move, negative when it is mated), else None (`azjax.engines.mate`).
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
    reused_visits: int = 0
    net_draw: float | None = None
    net_moves_left: float | None = None
    depth: float = 0.0
    seldepth: int = 0
    mate: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["stats"] = [s.to_dict() for s in self.stats]
        return d


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
        m = f" (M: {result.net_moves_left:.1f})" if result.net_moves_left is not None else ""  # lc0's, with its head
        lines.append(f"{prefix}{'node':<{width}} (    ) N: {result.visits:7d} (Q: {result.root_value: .5f}) "
                     f"(V: {result.net_value: .4f}){m}")
    return lines
