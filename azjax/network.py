"""The policy-value network: a small pre-activation ResNet in flax.

    logits, value = net.apply(params, observation)
    # observation [B, H, W, C] (any dtype) -> logits [B, A] float32, value [B] float32 in (-1, 1)

    logits, alpha, beta = sai_net.apply(params, observation)   # value_head="sai" (azjax.methods.sai)
    # alpha [B]: the player to move's expected board lead (points); beta [B] > 0: the sigmoid's slope

    outputs, variables = aux_net.apply(params, observation, mutable=[AUXILIARY])   # aux_heads=True (KataGo)
    auxiliary_outputs(variables)  # {"ownership_logit": [B, H, W], "score": [B] points}, for the player to move

    outputs, moves_left = with_moves_left(mlh_net.apply)(params, observation)   # moves_left_head=True (Lc0)
    # moves_left [B] > 0: the plies the game has left

The network knows no config: `azjax.build` makes it from one (`make_network`) and reads its outputs as a
search value (`make_evaluator`).

Normalisation is LayerNorm over channels rather than BatchNorm, so the network is a pure function
of (params, observation): search, self-play and SGD share one `apply` with no batch statistics to
thread through the loop or to keep in sync across devices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp


def first_player_plane(obs: jax.Array) -> jax.Array:
    """[B, H, W, C] -> [B, H, W, 1]: 1 where the player to move moved first, else 0, read from an observation
    whose channels 0 and 1 hold the mover's and the opponent's stones in a game where every move adds one
    stone (Connect Four): the first player is to move exactly when both have as many stones."""
    own, opponent = jnp.sum(obs[..., 0], axis=(-2, -1)), jnp.sum(obs[..., 1], axis=(-2, -1))
    plane = jnp.broadcast_to((own == opponent)[:, None, None, None], (*obs.shape[:-1], 1))
    return plane.astype(obs.dtype)


def _shifted(x: jax.Array, fill: float | int) -> list[jax.Array]:
    """[B, H, W] -> the four [B, H, W] boards of each point's neighbour above, below, left and right (`fill` off the
    board)."""
    padded = jnp.pad(x, ((0, 0), (1, 1), (1, 1)), constant_values=fill)
    return [padded[:, :-2, 1:-1], padded[:, 2:, 1:-1], padded[:, 1:-1, :-2], padded[:, 1:-1, 2:]]


def liberty_planes(obs: jax.Array) -> jax.Array:
    """[B, H, W, C] -> [B, H, W, 3]: KataGo's liberty features, 1 on every stone whose chain has exactly 1, 2 and 3
    liberties (distinct empty points next to the chain), read from a Go observation whose channels 0 and 1 hold the
    mover's and the opponent's stones (pgx's current position).

    Chains are labelled by their smallest point index, spread across same-colour neighbours until no label changes;
    a chain's liberties are the empty points one of whose neighbours carries its label."""
    b, h, w, _ = obs.shape
    n = h * w
    own, opponent = obs[..., 0] > 0, obs[..., 1] > 0
    stone = own | opponent
    colour = own.astype(jnp.int32) - opponent.astype(jnp.int32)  # +1 mover, -1 opponent, 0 empty
    index = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32).reshape(h, w), (b, h, w))
    label = jnp.where(stone, index, n)  # n: no chain

    def spread(carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        label, _ = carry
        smallest = label
        for near_label, near_colour in zip(_shifted(label, n), _shifted(colour, 0), strict=True):
            smallest = jnp.minimum(smallest, jnp.where(stone & (near_colour == colour), near_label, n))
        return smallest, jnp.any(smallest != label)

    label, _ = jax.lax.while_loop(lambda c: c[1], spread, (label, jnp.bool_(True)))
    # touches[b, p, c]: empty point p has a neighbour in chain c (c = n: no chain)
    touches = sum(jax.nn.one_hot(near, n + 1, dtype=jnp.int32).reshape(b, n, n + 1)
                  for near in _shifted(label, n)) > 0
    liberties = jnp.sum(touches & ~stone.reshape(b, n, 1), axis=1)  # [B, n + 1] per chain label
    count = jnp.take_along_axis(liberties, label.reshape(b, n), axis=1).reshape(b, h, w)
    planes = [stone & (count == k) for k in (1, 2, 3)]
    return jnp.stack(planes, axis=-1).astype(obs.dtype)


def board_pool(x: jax.Array) -> jax.Array:
    """KataGo's global pooling: [B, H, W, C] -> [B, 3C], each channel's mean over the board, that mean scaled by
    (width - 14) / 10 (so a layer can tell board sizes apart), and its max. Nothing in it depends on H or W, so
    the layers that read it play every board size."""
    b, h, w, c = x.shape
    mean = jnp.mean(x, axis=(1, 2))
    # The max is read at its argmax: jnp.max's gradient divides by the count of entries equal to the max, which
    # XLA's CPU backend at optimisation level 0 (the tests' setting) computed as 0, and the gradient came out NaN.
    flat = x.reshape(b, h * w, c)
    maximum = jnp.take_along_axis(flat, jnp.argmax(flat, axis=1)[:, None, :], axis=1)[:, 0, :]
    return jnp.concatenate([mean, mean * (((h * w) ** 0.5 - 14.0) / 10.0), maximum], axis=-1)


def global_pooling_blocks(num_blocks: int) -> frozenset[int]:
    """Which residual blocks carry a global pooling branch: the second of every three (KataGo's 6-block nets
    pool in 2 of their blocks), so even a 2-block trunk has one."""
    return frozenset(i for i in range(num_blocks) if i % 3 == 1)


class ResBlock(nn.Module):
    channels: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))
        y = nn.Conv(self.channels, (3, 3), dtype=self.dtype)(y)
        y = nn.relu(nn.LayerNorm(dtype=self.dtype)(y))
        y = nn.Conv(self.channels, (3, 3), dtype=self.dtype)(y)
        return x + y


class GlobalPoolBlock(nn.Module):
    """A residual block whose first convolution gets a per-channel bias read from the whole board (KataGo's
    global pooling bias): a second 3x3 convolution of `pool_channels`, normalised, ReLU, `board_pool`, dense to
    `channels`, added at every point. A shape, a ko or a group's liberties far away can then move every point's
    features within one block: [B, H, W, C] -> [B, H, W, C]."""

    channels: int
    pool_channels: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))
        g = nn.Conv(self.pool_channels, (3, 3), dtype=self.dtype, name="pool_conv")(y)
        g = nn.relu(nn.LayerNorm(dtype=self.dtype, name="pool_norm")(g))
        bias = nn.Dense(self.channels, dtype=self.dtype, name="pool_bias")(board_pool(g))
        y = nn.Conv(self.channels, (3, 3), dtype=self.dtype)(y) + bias[:, None, None, :]
        y = nn.relu(nn.LayerNorm(dtype=self.dtype)(y))
        y = nn.Conv(self.channels, (3, 3), dtype=self.dtype)(y)
        return x + y


# The collection KataGo's auxiliary heads (ownership, score) sow their outputs into (see `PolicyValueNet`).
AUXILIARY = "auxiliary"

# Filters of the heads' 1x1 convolutions. The value-like heads get KataGo's 32 channels: one filter
# followed by a ReLU can go negative on every input and leave the head a constant bias.
POLICY_HEAD_FILTERS = 2
# The moves-left head's output is MOVES_LEFT_PLIES * softplus(x) plies: positive, and near 14 plies at x = 0.
MOVES_LEFT_PLIES = 20.0
VALUE_HEAD_FILTERS = 32


class HeadConv(nn.Module):
    """A head's 1x1 convolution, normalised over the whole board, then ReLU: [B, H, W, C] -> [B, H*W*filters].

    The normalisation (LayerNorm over height, width and filters, per position) keeps about half the units
    active whatever the conv's weights do, so the head cannot die silently. The fraction of active units
    is sown as `intermediates/active` (the loop logs it as head health).
    """

    filters: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = nn.Conv(self.filters, (1, 1), dtype=self.dtype)(x)
        h = nn.relu(nn.LayerNorm(reduction_axes=(-3, -2, -1), dtype=self.dtype)(h))
        self.sow("intermediates", "active", jnp.mean((h > 0).astype(jnp.float32)))
        return h.reshape(h.shape[0], -1)


class ScalarHead(nn.Module):
    """AlphaZero's value head before its squashing: `HeadConv`, dense (+ LayerNorm) + ReLU, dense -> [B].

    With `hidden_norm` the hidden layer is normalised over its units before the ReLU, so no position can
    switch every hidden unit off: without it a chess run left all 32 below zero on every opening position,
    and the value there was the output bias alone (results/models/chess_quick).
    """

    filters: int
    hidden: int
    dtype: Any
    hidden_norm: bool = True
    pooled: bool = False  # read the head's features through `board_pool` rather than flattened (global pooling)
    outputs: int = 1  # 1: [B]; more (the win/draw/loss head's 3 logits): [B, outputs]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        v = HeadConv(self.filters, self.dtype, name="conv")(x)
        if self.pooled:
            v = board_pool(v.reshape(*x.shape[:3], self.filters))
        v = nn.Dense(self.hidden, dtype=self.dtype)(v)
        if self.hidden_norm:
            v = nn.LayerNorm(dtype=self.dtype, name="hidden_norm")(v)
        v = nn.relu(v)
        out = nn.Dense(self.outputs, dtype=self.dtype)(v)
        return out[:, 0] if self.outputs == 1 else out


class OwnershipHead(nn.Module):
    """KataGo's ownership head: `HeadConv` (normalised, so it cannot die as a lone 1-filter conv + ReLU did),
    then a 1x1 conv to one plane: [B, H, W, C] -> [B, H, W], the logit x of each point's ownership tanh(x)
    (+1: the player to move owns the point at the game's end, -1: the opponent does)."""

    filters: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        b, h, w, _ = x.shape
        o = HeadConv(self.filters, self.dtype, name="conv")(x).reshape(b, h, w, self.filters)
        return nn.Conv(1, (1, 1), dtype=self.dtype)(o)[..., 0]


class PooledPolicyHead(nn.Module):
    """KataGo's fully convolutional policy head for Go: one logit per point and one for pass, [B, H, W, C] ->
    [B, H*W + 1] (pgx's Go actions: the points row by row, then pass). A 1x1 convolution's features get a bias
    from the pooled features of a second one (as in `GlobalPoolBlock`), are normalised over the board and
    ReLU'd (their active fraction is sown as `active`, the head's health), and a 1x1 convolution reads each
    point's logit; pass is read from the pooled features. No layer sees the board's size."""

    filters: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        g = nn.relu(nn.LayerNorm(reduction_axes=(-3, -2, -1), dtype=self.dtype, name="pool_norm")(
            nn.Conv(self.filters, (1, 1), dtype=self.dtype, name="pool_conv")(x)))
        pooled = board_pool(g)
        p = nn.Conv(self.filters, (1, 1), dtype=self.dtype, name="conv")(x)
        p = p + nn.Dense(self.filters, dtype=self.dtype, name="pool_bias")(pooled)[:, None, None, :]
        p = nn.relu(nn.LayerNorm(reduction_axes=(-3, -2, -1), dtype=self.dtype, name="norm")(p))
        self.sow("intermediates", "active", jnp.mean((p > 0).astype(jnp.float32)))
        points = nn.Conv(1, (1, 1), dtype=self.dtype, name="point_logits")(p).reshape(x.shape[0], -1)
        return jnp.concatenate([points, nn.Dense(1, dtype=self.dtype, name="pass_logit")(pooled)], axis=-1)


class ConvPolicyHead(nn.Module):
    """AlphaZero's convolutional policy head for games whose moves start from a square (chess): a 3x3 convolution,
    normalised over the board and ReLU'd (its active fraction sown as `active`), then a 1x1 convolution to
    `planes` move planes at every square; each move's logit is read at its own square and plane through
    `index` (the game's `policy_layout`). [B, H, W, C] -> [B, len(index)].

    The dense head squeezes the board through 2 filters a square (128 numbers on chess's board) before one dense
    layer to all 4672 moves; here a move's logit reads the trunk's features at its from-square (docs/experiments.md,
    "chess's policy head", says what the dense head learnt)."""

    planes: int
    index: tuple[int, ...]
    channels: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        p = nn.Conv(self.channels, (3, 3), dtype=self.dtype, name="conv")(x)
        p = nn.relu(nn.LayerNorm(reduction_axes=(-3, -2, -1), dtype=self.dtype, name="norm")(p))
        self.sow("intermediates", "active", jnp.mean((p > 0).astype(jnp.float32)))
        planes = nn.Conv(self.planes, (1, 1), dtype=self.dtype, name="move_planes")(p)
        return jnp.take(planes.reshape(x.shape[0], -1), jnp.asarray(self.index, jnp.int32), axis=1)


class PolicyValueNet(nn.Module):
    """AlphaZero's network: a conv stem, `num_blocks` residual blocks, a policy head and a tanh value head.

    With `value_head="sai"` the value head is replaced by two heads of the same shape (SAI, docs/methods.md
    section 2): alpha (linear output, points) and beta* with beta = beta_scale * exp(beta*) (beta*
    clipped to [-15, 15] so beta stays finite); `__call__` then returns (logits, alpha, beta).

    With `value_head="wdl"` (Leela Chess Zero's win/draw/loss head, `azjax.methods.wdl`) the value head's last
    layer has three outputs, the logits of the player to move's win, draw and loss; `__call__` then returns
    (logits, wdl_logits [B, 3]).

    With `moves_left_head` (Leela Chess Zero's, `azjax.methods.moves_left`) one more scalar head predicts the plies
    the game has left; it is sown as `moves_left` [B] in `AUXILIARY` like KataGo's heads (`with_moves_left`).

    With `aux_heads` (KataGo's auxiliary targets, `azjax.methods.katago_aux`) the net has two more heads, an
    ownership head (`OwnershipHead`) and a score head (`ScalarHead`, output scaled by the board's area, so
    its linear unit predicts the margin as a share of the board): applied with `mutable=[AUXILIARY]`, they
    sow `ownership_logit` [B, H, W] and `score` [B] (points, the player to move's final margin after komi)
    there (`auxiliary_outputs`). `__call__` returns what it returns without them, so every caller (the
    search's evaluator, engines) reads the same outputs, and an apply that does not collect them never
    computes them.

    Head health: applied with `mutable=["intermediates"]`, each head's `conv/active` holds the fraction of
    its active units (see `head_health`).
    """

    num_actions: int
    num_blocks: int = 3
    num_channels: int = 32
    dtype: Any = jnp.float32
    value_head: str = "tanh"
    beta_scale: float = 1.0  # c in beta = c * exp(beta*) (SAI: 10 / intersections)
    legacy_heads: bool = False  # `Config.legacy_heads`: the unnormalised heads of older saved models
    head_hidden_norm: bool = True  # `Config.head_hidden_norm`: LayerNorm in the scalar heads' hidden layer
    colour_plane: bool = False  # `Config.colour_plane`: append `first_player_plane(obs)` to the input
    liberty_planes: bool = False  # `Config.liberty_planes` (Go): append `liberty_planes(obs)` to the input
    aux_heads: bool = False  # `Config.ownership_loss_weight` or `score_loss_weight` > 0: KataGo's extra heads
    global_pooling: bool = False  # `Config.global_pooling` (Go): `GlobalPoolBlock`s, pooled heads, any board size
    moves_left_head: bool = False  # `Config.moves_left_loss_weight` > 0: Lc0's moves-left head
    # `Config.policy_head="conv"`: the game's move layout (`Game.policy_layout`), planes and each move's flat index
    policy_planes: int = 0
    policy_index: tuple[int, ...] = ()

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, ...]:
        x = obs.astype(self.dtype)
        if self.colour_plane:
            x = jnp.concatenate([x, first_player_plane(x)], axis=-1)
        if self.liberty_planes:
            x = jnp.concatenate([x, liberty_planes(x)], axis=-1)
        x = nn.Conv(self.num_channels, (3, 3), dtype=self.dtype)(x)
        pooling = global_pooling_blocks(self.num_blocks) if self.global_pooling else frozenset()
        for i in range(self.num_blocks):
            if i in pooling:
                x = GlobalPoolBlock(self.num_channels, max(self.num_channels // 4, 1), self.dtype)(x)
            else:
                x = ResBlock(self.num_channels, self.dtype)(x)
        x = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))
        if self.legacy_heads:
            return self._legacy_heads(x)

        if self.global_pooling:
            logits = PooledPolicyHead(VALUE_HEAD_FILTERS, self.dtype, name="policy_head")(x)
        elif self.policy_planes:
            logits = ConvPolicyHead(self.policy_planes, self.policy_index, self.num_channels, self.dtype,
                                    name="policy_head")(x)
        else:
            p = HeadConv(POLICY_HEAD_FILTERS, self.dtype, name="policy_head")(x)
            logits = nn.Dense(self.num_actions, dtype=self.dtype)(p)

        def scalar_head(name: str, outputs: int = 1) -> jax.Array:
            head = ScalarHead(VALUE_HEAD_FILTERS, self.num_channels, self.dtype, self.head_hidden_norm,
                              pooled=self.global_pooling, outputs=outputs, name=name)
            return head(x).astype(jnp.float32)

        # Made at `init`, computed only where an apply collects them (SGD), never in the search.
        if self.aux_heads and (self.is_initializing() or self.is_mutable_collection(AUXILIARY)):
            ownership = OwnershipHead(VALUE_HEAD_FILTERS, self.dtype, name="ownership_head")(x).astype(jnp.float32)
            score = scalar_head("score_head") * (obs.shape[1] * obs.shape[2])
            if not self.is_initializing():  # init returns parameters only
                self.sow(AUXILIARY, "ownership_logit", ownership)
                self.sow(AUXILIARY, "score", score)
        if self.moves_left_head and (self.is_initializing() or self.is_mutable_collection(AUXILIARY)):
            moves_left = MOVES_LEFT_PLIES * nn.softplus(scalar_head("moves_left_head"))
            if not self.is_initializing():
                self.sow(AUXILIARY, "moves_left", moves_left)

        if self.value_head == "sai":
            alpha = scalar_head("alpha_head")
            beta_star = scalar_head("beta_head")
            beta = self.beta_scale * jnp.exp(jnp.clip(beta_star, -15.0, 15.0))
            return logits.astype(jnp.float32), alpha, beta
        if self.value_head == "wdl":
            return logits.astype(jnp.float32), scalar_head("value_head", outputs=3)
        return logits.astype(jnp.float32), jnp.tanh(scalar_head("value_head"))

    def _legacy_heads(self, x: jax.Array) -> tuple[jax.Array, ...]:
        """The heads of models saved before `HeadConv`: 1x1 convs (2 filters for the policy, 1 for each
        scalar head) and ReLU without normalisation. Kept so those models load and resume; their health is
        sown as `intermediates/<head>_active` (a dead one reads 0)."""

        def head_conv(filters: int, head: str) -> jax.Array:
            h = nn.relu(nn.Conv(filters, (1, 1), dtype=self.dtype)(x))
            self.sow("intermediates", f"{head}_active", jnp.mean((h > 0).astype(jnp.float32)))
            return h.reshape(h.shape[0], -1)

        def scalar_head(head: str) -> jax.Array:
            v = nn.relu(nn.Dense(self.num_channels, dtype=self.dtype)(head_conv(1, head)))
            return nn.Dense(1, dtype=self.dtype)(v)[:, 0].astype(jnp.float32)

        # The calls keep their order: flax names the unnamed layers by it, and the saved parameters by those names.
        logits = nn.Dense(self.num_actions, dtype=self.dtype)(head_conv(2, "policy_head")).astype(jnp.float32)
        if self.value_head == "sai":
            alpha, beta_star = scalar_head("alpha_head"), scalar_head("beta_head")
            return logits, alpha, self.beta_scale * jnp.exp(jnp.clip(beta_star, -15.0, 15.0))
        return logits, jnp.tanh(scalar_head("value_head"))


def head_health(intermediates: Any) -> dict[str, jax.Array]:
    """{"<head>_active": fraction of active units after the head's 1x1 conv} from the `intermediates`
    collection of an `apply(..., mutable=["intermediates"])`."""
    found = {}
    for name, sub in intermediates.items():
        if name.endswith("_active"):  # legacy heads
            found[name] = sub[0]
        elif name.endswith("_head"):
            active = sub["active"] if "active" in sub else sub["conv"]["active"]
            found[f"{name}_active"] = active[0]
    return found


def with_auxiliary(name: str) -> Callable[[Any], Any]:
    """apply_fn -> (params, observation [B, ...]) -> (`apply_fn`'s outputs, the auxiliary output `name` [B, ...]),
    from one apply of a network with that head: "moves_left" (`moves_left_head`), "score" or "ownership_logit"
    (`aux_heads`)."""

    def wrap(apply_fn: Any) -> Any:
        def apply(params: Any, observation: jax.Array) -> tuple[tuple[jax.Array, ...], jax.Array]:
            outputs, variables = apply_fn(params, observation, mutable=[AUXILIARY])
            return outputs, auxiliary_outputs(variables)[name]

        return apply

    return wrap


with_moves_left = with_auxiliary("moves_left")


def auxiliary_outputs(variables: Any) -> dict[str, jax.Array]:
    """{"ownership_logit": [B, H, W], "score": [B]} from the variables an `apply(..., mutable=[AUXILIARY, ...])`
    returned; {} for a network without the auxiliary heads."""
    return {name: sown[0] for name, sown in variables.get(AUXILIARY, {}).items()}
