"""Mate distances from a finished search, on the host: how many plies the proven part of a tree (certainty
propagation, docs/methods.md section 14) takes to end the game, for UCI's `score mate N`.

    plies = root_mate_plies(ProvenTree.of(tree))   # {root slot: +p (the mover wins in p plies), -p (loses)}
    mate_moves(3) == 2;  mate_moves(-2) == -1       # UCI counts moves: mate 2, mated in 1

In a proven subtree the winner picks its shortest proven win and the loser its longest defence (every move of a
lost node is proven lost, or it would not be proven). A move that ends the game is one ply; so is a move known
only from certainty's `ended` scan of its node (never expanded, but its result is known). Batch of one: the
engines search one position at a time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

MAX_PROOF_DEPTH = 400  # plies followed down a proof before giving up (a proof longer than this is not reported)


@dataclasses.dataclass(frozen=True)
class ProvenTree:
    """What a mate distance reads of a search tree of one position, as numpy arrays (N nodes, W children each).

    Attributes:
      children_index: int [N, W], -1 where the child was never expanded.
      rewards, discounts: float [N, W]: the move's reward to the node's mover; discount 0 where it ended the game.
      legal: bool [N, W]: the move is legal (its prior is not masked).
      lower, upper: float [N]: certainty's bounds on each node's value for its mover.
      ended: float [N, W]: the reward of each move that ends the game, from the node's scan (NaN elsewhere), or None.
    """

    children_index: np.ndarray
    rewards: np.ndarray
    discounts: np.ndarray
    legal: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    ended: np.ndarray | None = None

    @classmethod
    def of(cls, tree: Any) -> ProvenTree:
        """The first tree of a batched mctx tree (device arrays) whose extra data is a `CertaintyData`."""
        data = tree.extra_data
        fields = jax.device_get(dict(
            children_index=tree.children_index[0], rewards=tree.children_rewards[0],
            discounts=tree.children_discounts[0], logits=tree.children_prior_logits[0], lower=data.lower[0],
            upper=data.upper[0], ended=None if data.ended is None else data.ended[0]))  # fmt: skip
        logits = np.asarray(fields.pop("logits"))
        legal = logits > np.finfo(logits.dtype).min / 2  # as certainty reads legality
        return cls(legal=legal, **{k: (None if v is None else np.asarray(v)) for k, v in fields.items()})

    def child_bounds(self, node: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lower, upper, ends) [W]: bounds on each move's worth to `node`'s mover, and whether it ends the game
        (as `azjax.search.certainty.child_bounds` gives them)."""
        index = self.children_index[node]
        expanded = index >= 0
        child = np.maximum(index, 0)
        r, d = self.rewards[node], self.discounts[node]
        a, b = r + d * self.lower[child], r + d * self.upper[child]
        if self.ended is None:
            known = np.zeros_like(expanded)
            low, high = np.full(index.shape, -1.0), np.full(index.shape, 1.0)
        else:
            known = ~np.isnan(self.ended[node])
            low = np.where(known, self.ended[node], -1.0)
            high = np.where(known, self.ended[node], 1.0)
        return (np.where(expanded, np.minimum(a, b), low), np.where(expanded, np.maximum(a, b), high),
                np.where(expanded, d == 0, known))


def _move_plies(tree: ProvenTree, node: int, slot: int, ends: bool, memo: dict[int, int | None],
                depth: int) -> int | None:
    """Plies from `node` until the game ends after its move in `slot` (a proven move): 1 where the move ends it,
    else one more than the proof below it; None where the proof is not in the tree."""
    if ends:
        return 1
    child = int(tree.children_index[node, slot])
    if child < 0:
        return None
    below = _node_plies(tree, child, memo, depth + 1)
    return None if below is None else 1 + below


def _node_plies(tree: ProvenTree, node: int, memo: dict[int, int | None], depth: int = 0) -> int | None:
    """Plies to the end of the game from a proven won or lost node under best play: the winner's shortest proven
    win, the loser's longest defence; None where the node is not proven won or lost, or the proof runs deeper
    than MAX_PROOF_DEPTH."""
    if node in memo:
        return memo[node]
    if depth > MAX_PROOF_DEPTH:
        return None
    lower, upper, ends = tree.child_bounds(node)
    legal = tree.legal[node]
    result: int | None = None
    if tree.lower[node] >= 1.0:  # won: the quickest of the winning moves
        wins = [_move_plies(tree, node, int(s), bool(ends[s]), memo, depth)
                for s in np.flatnonzero(legal & (lower >= 1.0))]
        wins = [p for p in wins if p is not None]
        result = min(wins) if wins else None
    elif tree.upper[node] <= -1.0:  # lost: every move loses; the longest
        losses = [_move_plies(tree, node, int(s), bool(ends[s]), memo, depth) for s in np.flatnonzero(legal)]
        result = None if not losses or any(p is None for p in losses) else max(losses)  # type: ignore[type-var]
    memo[node] = result
    return result


def root_mate_plies(tree: ProvenTree) -> dict[int, int]:
    """{root slot: signed plies} for each legal root move proven won (+p: the root's mover wins p plies from the
    root, the move itself the first) or lost (-p: the opponent ends the game p plies from the root)."""
    lower, upper, ends = tree.child_bounds(0)
    memo: dict[int, int | None] = {}
    out = {}
    for slot in np.flatnonzero(tree.legal[0]):
        s = int(slot)
        if lower[s] >= 1.0 or upper[s] <= -1.0:
            plies = _move_plies(tree, 0, s, bool(ends[s]), memo, 0)
            if plies is not None:
                out[s] = plies if lower[s] >= 1.0 else -plies
    return out


def mate_moves(plies: int) -> int:
    """UCI's `mate N` for a game that ends `plies` plies from now (positive: the side to move wins; negative: it
    is mated): N counts the side to move's moves, negative when it is mated.

        mate_moves(1) == 1, mate_moves(3) == 2, mate_moves(-2) == -1, mate_moves(-4) == -2
    """
    if plies == 0:
        raise ValueError("a game that is over has no mate distance")
    moves = (abs(plies) + 1) // 2
    return moves if plies > 0 else -moves
