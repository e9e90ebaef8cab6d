"""Leela Chess Zero's moves-left head (lc0 pull request 961, 2020; docs/methods.md section 12): a head that predicts
how many plies the game has left, and a search that uses it to prefer, among lines of nearly the same value, the
shorter when winning and the longer when losing. Lc0 added it because a network that sees every move as winning
has no reason to make progress, and drew won endings by the fifty-move rule.

Target: the plies from a position to its game's end, the ending move included (1 for the last position), whatever
ended the game (mate, a draw rule, material adjudication, the self-play move cap). A game keeps one number in the
replay (`Replay.finals`): the replay row of its last move. A game's positions fill consecutive rows of its slot,
so an entry's target is its distance in rows to that one.

Search (`MovesLeftValue`): a node d plies below the root, whose head predicts m plies left, is expected to end the
game d + m - m_root plies later than the root expects (m_root, the root's prediction). Its value v (for its player
to move) becomes

    v - sign(v) f(|v|) clip(slope (d + m - m_root), -max_effect, max_effect),   f(q) = 1.6521 q - 0.6521 q^2,

so a longer line is worth less to the side it favours and more to the side it does not. f, slope (0.0027 a ply)
and max_effect (0.0345) are lc0's defaults (`MovesLeftScaledFactor`, `MovesLeftQuadraticFactor`,
`MovesLeftSlope`, `MovesLeftMaxEffect`); f(0) = 0 leaves an even position alone, f(1) = 1.

    targets = MovesLeftTargets(weight=0.1)
    value = MovesLeftValue(inner=TanhValue(), moves_left_apply=with_moves_left, slope=0.0027, max_effect=0.0345)

`moves_left_loss_weight=0` (the default) is AlphaZero: no head, no per-game record, no loss term, and the search
reads the value head alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from azjax import replay as rb
from azjax.games import Game, GameState
from azjax.games.augment import augment
from azjax.methods.alphazero import ApplyFn, Records, ValueHeadWrapper
from azjax.search import Evaluator, ParentAwareEvaluator

__all__ = ["MovesLeftTargets", "MovesLeftValue", "MovesLeftContext", "moves_left_utility",
           "RECOMMENDED_MOVES_LEFT_WEIGHT", "LC0_SLOPE", "LC0_MAX_EFFECT"]

Array = jax.Array
# (params, observations [B, ...]) -> (the network's outputs, its moves-left prediction [B] in plies), from one
# apply: `azjax.network.with_moves_left(apply_fn)`.
MovesLeftApply = Callable[[Any, Array], tuple[tuple[Array, ...], Array]]

HUBER_PLIES = 20.0  # the loss's unit: errors below 20 plies cost their square, larger ones grow linearly
RECOMMENDED_MOVES_LEFT_WEIGHT = 0.1  # with HUBER_PLIES, a term of the value loss's order
LC0_SLOPE = 0.0027  # per ply (lc0's MovesLeftSlope)
LC0_MAX_EFFECT = 0.0345  # lc0's MovesLeftMaxEffect
LC0_SCALED_FACTOR, LC0_QUADRATIC_FACTOR = 1.6521, -0.6521  # f(q) = a q + b q^2, f(1) = 1


def moves_left_utility(value: Array, extra_plies: Array, slope: float, max_effect: float) -> Array:
    """value [B] (for the player to move) adjusted for a line expected to last `extra_plies` [B] plies longer than
    the root expects: lowered for the side it favours, raised for the other; |value| = 0 unchanged."""
    q = jnp.abs(value)
    factor = LC0_SCALED_FACTOR * q + LC0_QUADRATIC_FACTOR * q * q
    effect = jnp.clip(slope * extra_plies, -max_effect, max_effect)
    return value - jnp.sign(value) * factor * effect


@dataclasses.dataclass(frozen=True)
class MovesLeftTargets:
    """The auxiliary-targets seam (`azjax.methods.alphazero.AuxiliaryTargets`) with the plies each position's game
    went on for, learnt by the moves-left head with a Huber loss weighted `weight`."""

    weight: float = RECOMMENDED_MOVES_LEFT_WEIGHT
    columns: tuple[str, ...] = ("moves_left_loss", "moves_left_error", "moves_left_std", "moves_left_head_active")

    @property
    def finals(self) -> rb.FinalSpec:
        return {"end_row": ((), jnp.int32)}

    def game_ended(self, replay: rb.Replay, ptr: Array, ended: Array, game_id: Array,
                   final: GameState) -> rb.Replay:
        del final
        num_slots = ended.shape[0]
        end_row = jnp.full((num_slots,), ptr // num_slots, jnp.int32)  # this move's row, in every slot
        return rb.fill_finals(replay, ended, game_id, {"end_row": end_row})

    def sample(self, replay: rb.Replay, idx: Array) -> Records:
        rows, num_slots = replay.finals["end_row"].shape
        end_row = rb.sampled_finals(replay, idx)["end_row"]
        # The ring wraps: an entry's row is at most a ring's length before its game's last row.
        plies_left = (end_row - idx // num_slots) % rows + 1
        return {"moves_left": plies_left.astype(jnp.float32)}

    def augment(self, game: Game, key: Array, obs: Array, policy: Array,
                targets: Records) -> tuple[Array, Array, Records]:
        return (*augment(game, key, obs, policy), targets)  # a symmetry leaves the game's length alone

    def loss(self, predictions: Records, targets: Records) -> tuple[tuple[Array, ...], dict[str, Array]]:
        m, target = predictions["moves_left"], targets["moves_left"]
        loss = optax.huber_loss(m / HUBER_PLIES, target / HUBER_PLIES, delta=1.0).mean()
        info = {
            "moves_left_loss": loss,
            "moves_left_error": jax.lax.stop_gradient(jnp.mean(jnp.abs(m - target))),  # plies
            "moves_left_std": jax.lax.stop_gradient(jnp.std(m)),  # a constant head reads 0
        }
        return (self.weight * loss,), info


class MovesLeftContext(NamedTuple):
    """What a search node passes its children: the root's predicted plies left and the node's depth, both [B]."""

    root_moves_left: Array
    depth: Array


@dataclasses.dataclass(frozen=True)
class MovesLeftValue(ValueHeadWrapper):
    """A value-head seam that is `inner` for training and, in the search, adjusts each node's value by its
    predicted game length relative to the root's (`moves_left_utility`). `max_effect` 0: the search reads
    `inner`'s values unchanged."""

    # apply_fn -> its `MovesLeftApply` (`azjax.network.with_moves_left`; given by the build, as methods do not
    # import the network)
    moves_left_apply: Callable[[ApplyFn], MovesLeftApply]
    slope: float = LC0_SLOPE
    max_effect: float = LC0_MAX_EFFECT

    def evaluator(self, apply_fn: ApplyFn) -> Evaluator | ParentAwareEvaluator:
        if self.max_effect == 0:
            return self.inner.evaluator(apply_fn)
        if isinstance(self.inner.evaluator(apply_fn), ParentAwareEvaluator):
            raise ValueError("the moves-left search needs a value head whose nodes do not depend on their parent")

        network = self.moves_left_apply(apply_fn)

        def heads(params: Any, states: GameState) -> tuple[Array, Array, Array]:
            outputs, m = network(params, states.observation)
            # The inner head reads the outputs of this one apply: the network runs once per node.
            logits, value = self.inner.evaluator(lambda p, obs: outputs)(params, states)
            return logits, value, m

        def root(params: Any, states: GameState) -> tuple[Array, Array, MovesLeftContext]:
            logits, value, m = heads(params, states)
            return logits, value, MovesLeftContext(root_moves_left=m, depth=jnp.zeros_like(m))

        def child(params: Any, states: GameState,
                  parent: MovesLeftContext) -> tuple[Array, Array, MovesLeftContext]:
            logits, value, m = heads(params, states)
            depth = parent.depth + 1
            value = moves_left_utility(value, depth + m - parent.root_moves_left, self.slope, self.max_effect)
            return logits, value, MovesLeftContext(root_moves_left=parent.root_moves_left, depth=depth)

        return ParentAwareEvaluator(root=root, child=child)
