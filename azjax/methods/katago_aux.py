"""KataGo's auxiliary targets for Go: each point's final ownership and the final score margin, learnt by two
extra heads with small loss weights (Wu, "Accelerating Self-Play Learning in Go", 2019, section 4.1; KataGo
reports they speed learning up several times).

Both come from the position a game ends in, as pgx scores it (Tromp-Taylor area scoring, the same count that
decides z; a game ended by the move cap is scored where it stands, as z is):

  * ownership: +1 for a point the player to move owns at the end (a stone of theirs, or an empty point whose
    region reaches only their stones), -1 for one the opponent owns, 0 for dame (regions reaching both colours
    or none). Their sum over the board is Black's area lead, so the two targets agree;
  * score: the final area margin of the player to move, komi included, so its sign is z's (except in the
    rare game pgx ends by positional superko, where the repeating move loses whatever the board says).

Both are kept once per game (`Replay.finals`: [N / B, B, H*W] int8 ownership and [N / B, B] score, from
player id 0's view) and turned to each sampled position's player to move at sampling time, so a game's end
costs O(B * H * W), not a pass over the replay.

    targets = OwnershipScoreTargets(size=9, ownership_weight=1.5, score_weight=0.02)

Both weights 0 is AlphaZero: the build leaves the heads, the replay's finals and the loss terms out.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from azjax import replay as rb
from azjax.games import Game, GameState, board_arrays
from azjax.games.augment import augment
from azjax.games.go_rules import neighbour_sum
from azjax.methods.alphazero import Records, ValueHeadWrapper

__all__ = ["AuxiliaryValue", "OwnershipScoreTargets", "area_ownership", "final_targets",
           "RECOMMENDED_OWNERSHIP_WEIGHT", "RECOMMENDED_SCORE_WEIGHT"]

Array = jax.Array

# KataGo's weights: ownership 1.5 / area summed over the points (1.5 on the mean over points, as here); its
# score-mean loss weight is small (0.02 on a Huber loss in points). Ours is on the margin as a share of the board,
# whose MSE is of the order of the value's: 0.1 keeps it a small part of the loss.
RECOMMENDED_OWNERSHIP_WEIGHT = 1.5
RECOMMENDED_SCORE_WEIGHT = 0.1


def area_ownership(board: Array, size: int) -> Array:
    """int8 [..., N]: Black's view of each point's Tromp-Taylor owner, +1 Black, -1 White, 0 neither.

    board: int [..., N], pgx's board (> 0 a Black stone, < 0 a White one, 0 empty). An empty point belongs to
    a colour when its empty region reaches that colour's stones only (pgx's `_count_ji`); the regions are
    grown from the stones one step a round until no empty point is added, every board at once.
    """
    empty = board == 0
    stones = jnp.stack([board > 0, board < 0])  # [2, ..., N]: Black's, White's

    def grow(carry: tuple[Array, Array]) -> tuple[Array, Array]:
        reach, _ = carry
        grown = reach | (empty & (neighbour_sum(reach.astype(jnp.int32), size) > 0))
        return grown, jnp.any(grown != reach)

    reach, _ = jax.lax.while_loop(lambda c: c[1], grow, (stones, jnp.bool_(True)))
    black = stones[0] | (empty & reach[0] & ~reach[1])
    white = stones[1] | (empty & reach[1] & ~reach[0])
    return black.astype(jnp.int8) - white.astype(jnp.int8)


def final_targets(final: GameState, size: int) -> tuple[Array, Array]:
    """(ownership int8 [B, N], score float32 [B]) of finished Go games `final` [B], from player id 0's view:
    `area_ownership`, and Black's area lead minus the game's komi, negated where player 0 plays White."""
    x = board_arrays(final)
    black_view = area_ownership(x.board, size)
    black_margin = jnp.sum(black_view, axis=-1, dtype=jnp.int32).astype(jnp.float32) - final.komi
    # pgx's current player is the one whose colour is to move: Black's player id follows from both.
    black_id = jnp.where(x.color == 0, final.current_player, 1 - final.current_player)
    sign = jnp.where(black_id == 0, 1, -1)
    return black_view * sign[:, None].astype(jnp.int8), black_margin * sign


@dataclasses.dataclass(frozen=True)
class OwnershipScoreTargets:
    """The auxiliary-targets seam (`azjax.methods.alphazero.AuxiliaryTargets`) with KataGo's ownership and score
    targets on a `size` x `size` Go board, weighted `ownership_weight` and `score_weight` in the loss."""

    size: int
    ownership_weight: float = RECOMMENDED_OWNERSHIP_WEIGHT
    score_weight: float = RECOMMENDED_SCORE_WEIGHT
    columns: tuple[str, ...] = ("ownership_loss", "score_loss", "ownership_std", "score_std",
                                "ownership_head_active", "score_head_active")

    @property
    def finals(self) -> rb.FinalSpec:
        return {"ownership": ((self.size * self.size,), jnp.int8), "score": ((), jnp.float32)}

    def game_ended(self, replay: rb.Replay, ptr: Array, ended: Array, game_id: Array,
                   final: GameState) -> rb.Replay:
        del ptr
        # Boards of games still running are emptied: their fill stops at once, so the batch's fill ends early.
        x = board_arrays(final)
        final = final.replace(env=final.env.replace(_x=x._replace(board=jnp.where(ended[:, None], x.board, 0))))
        ownership, score = final_targets(final, self.size)
        return rb.fill_finals(replay, ended, game_id, {"ownership": ownership, "score": score})

    def sample(self, replay: rb.Replay, idx: Array) -> Records:
        kept = rb.sampled_finals(replay, idx)
        mover = jnp.where(replay.player[idx] == 0, 1, -1)  # the finals are player 0's view
        return {"ownership": kept["ownership"] * mover[:, None].astype(jnp.int8), "score": kept["score"] * mover}

    def augment(self, game: Game, key: Array, obs: Array, policy: Array,
                targets: Records) -> tuple[Array, Array, Records]:
        # The ownership rides along as one more observation plane, so it gets each position's own symmetry.
        planes = targets["ownership"].reshape(-1, self.size, self.size, 1).astype(jnp.float32)
        joined, policy = augment(game, key, jnp.concatenate([obs.astype(jnp.float32), planes], axis=-1), policy)
        ownership = joined[..., -1].reshape(planes.shape[0], -1).astype(jnp.int8)
        return joined[..., :-1].astype(obs.dtype), policy, {**targets, "ownership": ownership}

    def loss(self, predictions: Records, targets: Records) -> tuple[tuple[Array, ...], dict[str, Array]]:
        logit = predictions["ownership_logit"].reshape(targets["ownership"].shape)  # [batch, N]
        # KataGo's cross-entropy of the outcome probabilities (1 + o) / 2 against (1 + tanh x) / 2 = sigmoid(2x):
        # a proper scoring rule for dame (o = 0 -> 1/2), with steeper gradients than MSE on confident errors.
        ownership_loss = optax.sigmoid_binary_cross_entropy(2.0 * logit, (1.0 + targets["ownership"]) / 2.0).mean()
        score = predictions["score"]
        area = self.size * self.size
        # MSE of the margin as a share of the board: the value loss's scale, whatever the board's size.
        score_loss = jnp.mean(((score - targets["score"]) / area) ** 2)
        info = {
            "ownership_loss": ownership_loss,
            "score_loss": score_loss,
            # Head health: spread over the batch (per point for the ownership, then averaged); a constant reads 0.
            "ownership_std": jax.lax.stop_gradient(jnp.mean(jnp.std(jnp.tanh(logit), axis=0))),
            "score_std": jax.lax.stop_gradient(jnp.std(score)),
        }
        return (self.ownership_weight * ownership_loss, self.score_weight * score_loss), info


@dataclasses.dataclass(frozen=True)
class AuxiliaryValue(ValueHeadWrapper):
    """A value-head seam that is `inner` and logs the auxiliary heads with it: its columns (what metrics.csv and
    the dead-head watch read of the value head) gain the auxiliary targets' `auxiliary_columns`. The
    ownership and score heads are KataGo's value-head family (they grow out of its value head's features)."""

    auxiliary_columns: tuple[str, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.inner.columns, *self.auxiliary_columns)
