"""SAI: sigmoid-komi values for Go (docs/methods.md section 2; Morandin et al., "SAI, a Sensible Artificial
Intelligence that plays Go").

The network's value head is replaced by two heads, alpha (points: the expected lead on the board of the
player to move, before komi) and beta = c * exp(beta*) (c = 10 / intersections), so that the winrate of
the player to move, given x extra points, is the sigmoid

    rho(x) = sigmoid(beta * (alpha + kbar + x)),   kbar = +komi if White is to move, -komi if Black is.

This module holds the pieces, each a small pure function:

  * the math: `signed_komi`, `winrate`, `score_lead`, `black_board_lead`, `interval_winrate` (mu, the
    closed-form average of the sigmoid over an interval of bonuses), `sensible_bonus` (xbar);
  * evaluators for the search: `winrate_evaluator` (value 2 rho(0) - 1 for the player to move) and
    `sensible_evaluator` (lambda > 0: children valued with mu over the parent's interval);
  * self-play: `new_game_komi` (komi drawn from the empty board's sigmoid), `branch_komi`, and
    `BranchPoints` (positions picked for branching while a game is played, handed to the start-state
    queue when it ends);
  * read-outs: `Readout` / `readout` (score estimate, beta, winrate against komi) for `azjax analyze`.

Go only: a state's colour to move is `board_arrays(state).color` (0 = Black) and its komi `state.komi`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import Game, GameState, board_arrays, where_games
from azjax.methods import start_states as ss
from azjax.methods.alphazero import Searched, squared_error
from azjax.search import Evaluator, ParentAwareEvaluator

Array = jax.Array
# (params, states [B]) -> (prior logits [B, A], alpha [B], beta [B]), alpha and beta for the player to move.
Heads = Callable[[Any, GameState], tuple[Array, Array, Array]]

SMALL_INTERVAL = 1e-3  # |y| below this: mu_r(y) = rho_r(0)


# ---------------------------------------------------------------- the sigmoid


def beta_scale(intersections: int) -> float:
    """c = 10 / intersections: beta = c * exp(beta*) starts near the slope a weak player's games have."""
    return 10.0 / intersections


def black_to_move(states: GameState) -> Array:
    """bool [...]: Black is to move (Go)."""
    return board_arrays(states).color == 0


def signed_komi(komi: Array, black: Array) -> Array:
    """kbar: the komi as points for the player to move: +komi if White is to move, -komi if Black is."""
    return jnp.where(black, -komi, komi)


def winrate(alpha: Array, beta: Array, kbar: Array, x: Array | float = 0.0) -> Array:
    """rho(x) = sigmoid(beta * (alpha + kbar + x)): the player to move's winrate with x bonus points."""
    return jax.nn.sigmoid(beta * (alpha + kbar + x))


def score_lead(alpha: Array, kbar: Array) -> Array:
    """alpha + kbar: the player to move's expected final margin after komi (points)."""
    return alpha + kbar


def black_board_lead(alpha: Array, black: Array) -> Array:
    """alpha_black: Black's expected lead on the board (before komi) from the player to move's alpha."""
    return jnp.where(black, alpha, -alpha)


def interval_winrate(a: Array, beta: Array, y: Array) -> Array:
    """mu(y) = (1/y) int_0^y sigmoid(beta (a + x)) dx, the winrate averaged over bonuses between 0 and y.

    Closed form (docs/methods.md section 2), with a' = |a|, b = |a + y|:

        mu = 1/2 + (b - a') / (2y) + (log sigmoid(beta a') - log sigmoid(beta b)) / (beta y)

    evaluated without cancellation: (b - a') / y = (2a + y) / (a' + b), and the log difference as
    log1p(sigmoid(-beta a') * expm1(beta (a' - b))). For |y| < 1e-3, mu = sigmoid(beta a).
    All arguments broadcast; a is in the same player's view as the winrate (a = lead after komi).
    """
    a, beta, y = jnp.broadcast_arrays(*(jnp.asarray(v, jnp.float32) for v in (a, beta, y)))
    small = jnp.abs(y) < SMALL_INTERVAL
    y_safe = jnp.where(small, 1.0, y)
    a_abs, b = jnp.abs(a), jnp.abs(a + y_safe)
    ratio = (2.0 * a + y_safe) / (a_abs + b)  # (b - a') / y
    d = -beta * y_safe * ratio  # beta (a' - b)
    u, v = beta * a_abs, beta * b
    log_diff = jnp.where(
        d < 20.0,
        jnp.log1p(jax.nn.sigmoid(-u) * jnp.expm1(jnp.minimum(d, 20.0))),
        jax.nn.log_sigmoid(u) - jax.nn.log_sigmoid(v),  # no cancellation this far apart
    )
    mu = 0.5 + 0.5 * ratio + log_diff / (beta * y_safe)
    return jnp.where(small, jax.nn.sigmoid(beta * a), jnp.clip(mu, 0.0, 1.0))


def sensible_bonus(alpha: Array, beta: Array, kbar: Array, lam: float) -> Array:
    """xbar: the bonus to the player to move that makes its winrate pi_lambda = (1 - lambda) rho(0) + lambda/2.

    xbar = logit(pi_lambda) / beta - (alpha + kbar); 0 for lambda = 0. Negative when the player is ahead
    (it plays against a handicap), positive when it is behind.
    """
    if not isinstance(lam, jax.core.Tracer) and lam == 0:  # traced: a sweep's run axis, where lambda > 0
        return jnp.zeros_like(alpha)
    z = beta * (alpha + kbar)
    pi = (1.0 - lam) * jax.nn.sigmoid(z) + 0.5 * lam
    one_minus_pi = (1.0 - lam) * jax.nn.sigmoid(-z) + 0.5 * lam  # 1 - pi without cancellation
    return (jnp.log(pi) - jnp.log(one_minus_pi)) / beta - (alpha + kbar)


# ---------------------------------------------------------------- evaluators for the search


def network_heads(apply_fn: Callable[..., tuple[Array, Array, Array]]) -> Heads:
    """The heads of a SAI network: `apply_fn(params, observation) -> (logits, alpha, beta)`."""

    def heads(params: Any, states: GameState) -> tuple[Array, Array, Array]:
        return apply_fn(params, states.observation)

    return heads


def winrate_evaluator(heads: Heads) -> Evaluator:
    """The plain SAI evaluator (lambda = 0): value 2 rho(0) - 1 for the player to move."""

    def evaluate(params: Any, states: GameState) -> tuple[Array, Array]:
        logits, alpha, beta = heads(params, states)
        kbar = signed_komi(states.komi, black_to_move(states))
        return logits, 2.0 * winrate(alpha, beta, kbar) - 1.0

    return evaluate


def sensible_evaluator(heads: Heads, lam: float) -> ParentAwareEvaluator:
    """SAI's sensible agent with parameter lambda, as a search evaluator whose nodes carry xbar.

    Each node s carries its own xbar_s converted to a bonus to Black (`sensible_bonus` of its own net
    output). A child r of s is valued, in Black's view, with Black's winrate averaged over bonuses
    between 0 and y = xbar_s (`interval_winrate` with a(r) = Black's board lead at r minus komi), then
    turned into the view of the player to move at r: v = 2 mu - 1 (Black to move) or 1 - 2 mu (White).
    The root, having no parent, gets its plain winrate 2 rho(0) - 1.
    """

    def own(params: Any, states: GameState) -> tuple[Array, Array, Array, Array]:
        logits, alpha, beta = heads(params, states)
        black = black_to_move(states)
        kbar = signed_komi(states.komi, black)
        xbar = sensible_bonus(alpha, beta, kbar, lam)
        return logits, alpha, beta, jnp.where(black, xbar, -xbar)

    def root(params: Any, states: GameState) -> tuple[Array, Array, Array]:
        logits, alpha, beta, xbar_black = own(params, states)
        kbar = signed_komi(states.komi, black_to_move(states))
        return logits, 2.0 * winrate(alpha, beta, kbar) - 1.0, xbar_black

    def child(params: Any, states: GameState, parent_xbar_black: Array) -> tuple[Array, Array, Array]:
        logits, alpha, beta, xbar_black = own(params, states)
        black = black_to_move(states)
        a = black_board_lead(alpha, black) - states.komi  # a(r): Black's lead after komi
        mu_black = interval_winrate(a, beta, parent_xbar_black)
        value = jnp.where(black, 2.0 * mu_black - 1.0, 1.0 - 2.0 * mu_black)
        return logits, value, xbar_black

    return ParentAwareEvaluator(root=root, child=child)


def make_sai_evaluator(heads: Heads, lam: float | Array = 0.0,
                       sensible: bool | None = None) -> Evaluator | ParentAwareEvaluator:
    """`winrate_evaluator` for lambda = 0 (the same values, less work), else `sensible_evaluator`.
    `sensible` picks between them when lambda is traced (a sweep); then lambda is not checked here."""
    if sensible is None:
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"sensible_lambda must be in [0, 1], got {lam}")
        sensible = lam != 0
    return sensible_evaluator(heads, lam) if sensible else winrate_evaluator(heads)


# ---------------------------------------------------------------- komi of new games and branches


def _half_integer(x: Array, max_abs: float) -> Array:
    """0.5 + floor(x), kept within [-max_abs, max_abs] (max_abs a half-integer)."""
    return 0.5 + jnp.floor(jnp.clip(x, -max_abs - 0.5, max_abs - 0.5))


def new_game_komi(key: Array, alpha0: Array, beta0: Array, shape: tuple[int, ...], official_komi: float,
                  official_share: float, max_abs: float) -> Array:
    """float32 [shape]: komi of new games from the empty board's sigmoid.

    K = 0.5 + floor(X), X = alpha0 + logit(U) / beta0 (a logistic draw centred on Black's expected board
    lead alpha0, scale 1 / beta0), so P(K <= m + 0.5) = sigmoid(beta0 (m + 1 - alpha0)); a share
    `official_share` of the games keeps `official_komi`. K is kept within +-max_abs (e.g. the number of
    intersections + 0.5: a larger komi only repeats a decided game).
    """
    k_x, k_share = jax.random.split(key)
    x = alpha0 + jax.random.logistic(k_x, shape) / beta0
    official = jax.random.uniform(k_share, shape) < official_share
    return jnp.where(official, jnp.float32(official_komi), _half_integer(x, max_abs)).astype(jnp.float32)


def branch_komi(alpha_black: Array, max_abs: float) -> Array:
    """k' = 0.5 + floor(alpha_black): the komi that makes a branch start even (within +-max_abs)."""
    return _half_integer(alpha_black, max_abs).astype(jnp.float32)


@struct.dataclass
class BranchPoints:
    """Positions of the games in flight picked as branch starts, K at most per game.

    states: GameState [B, K], each already carrying its branch komi k'. count: int32 [B], how many of
    the K are filled for the game now in slot b. drawn: int32 [B], how many of the game's positions were
    drawn so far (the K kept are a uniform choice among them).
    """

    states: GameState
    count: Array
    drawn: Array


def init_branch_points(states: GameState, max_branches: int) -> BranchPoints:
    """Empty branch points for the games `states` ([B]) with room for `max_branches` each."""
    tiled = jax.tree.map(lambda x: jnp.repeat(x[:, None], max_branches, axis=1), states)
    zeros = jnp.zeros(states.komi.shape, jnp.int32)
    return BranchPoints(states=tiled, count=zeros, drawn=zeros)


def record_branch_points(points: BranchPoints, key: Array, states: GameState, alpha_black: Array,
                         branch_prob: float, max_abs_komi: float, active: Array | None = None) -> BranchPoints:
    """Each (active, non-terminal) position `states[b]` is drawn as a branch point of its game with
    probability `branch_prob`, independently; its komi is k' = 0.5 + floor(alpha_black).

    Called once per move with the positions about to be searched. When a game draws more than K positions,
    the K it keeps are a uniform choice among all it drew (reservoir sampling: the n-th draw, n > K, replaces
    a uniformly chosen kept one with probability K / n), as docs/methods.md section 2 has it: "each non-terminal
    position independently with probability C_branch, at most 3 per game".
    """
    k = jax.tree.leaves(points.states)[0].shape[1]
    k_draw, k_keep, k_slot = jax.random.split(key, 3)
    draw = jax.random.bernoulli(k_draw, branch_prob, points.count.shape) & ~states.terminated
    if active is not None:
        draw = draw & active
    n = points.drawn + draw  # this draw is the game's n-th
    keep = draw & ((n <= k) | (jax.random.uniform(k_keep, n.shape) * n < k))
    slot = jnp.where(n <= k, n - 1, jax.random.randint(k_slot, n.shape, 0, k))
    branch = states.replace(komi=branch_komi(alpha_black, max_abs_komi))
    at = keep[:, None] & (jnp.arange(k)[None, :] == slot[:, None])  # [B, K]

    def put(buf: Array, x: Array) -> Array:
        sel = at.reshape(at.shape + (1,) * (buf.ndim - 2))
        return jnp.where(sel, x[:, None], buf)

    return BranchPoints(states=jax.tree.map(put, points.states, branch), count=jnp.minimum(n, k), drawn=n)


def take_branch_points(points: BranchPoints, ended: Array) -> tuple[GameState, Array, BranchPoints]:
    """The branch points of the games that `ended` ([B]): (states [B*K], mask [B*K], points emptied for
    those slots). Push them into the start-state queue with `start_states.push(q, states, mask)`."""
    b, k = points.count.shape[0], jax.tree.leaves(points.states)[0].shape[1]
    mask = ended[:, None] & (jnp.arange(k)[None, :] < points.count[:, None])
    flat = jax.tree.map(lambda x: x.reshape(b * k, *x.shape[2:]), points.states)
    emptied = points.replace(count=jnp.where(ended, 0, points.count), drawn=jnp.where(ended, 0, points.drawn))
    return flat, mask.reshape(b * k), emptied


# ---------------------------------------------------------------- the loop's seams (azjax.methods.alphazero)


@dataclasses.dataclass(frozen=True)
class SigmoidKomiValue:
    """SAI's value head: the winrate 2 rho(0) - 1 of the player to move, rho(0) = sigmoid(beta (alpha + kbar)).

    The search values nodes with it (or, `sensible_lambda` > 0, with the sensible agent); the replay keeps each
    position's kbar, with which the loss forms rho(0).
    """

    sensible_lambda: float = 0.0
    columns: tuple[str, ...] = ("alpha_std", "beta_std", "policy_head_active", "alpha_head_active",
                                "beta_head_active")
    records: tuple[str, ...] = ("kbar",)
    sensible: bool | None = None  # the sensible agent or the plain winrate; sensible_lambda > 0 unless given

    def evaluator(self, apply_fn: Callable[..., tuple[Array, Array, Array]]) -> Evaluator | ParentAwareEvaluator:
        return make_sai_evaluator(network_heads(apply_fn), self.sensible_lambda, self.sensible)

    def record(self, states: GameState) -> dict[str, Array]:
        return {"kbar": signed_komi(states.komi, black_to_move(states))}

    def train_value(self, outputs: tuple[Array, ...],
                    recorded: dict[str, Array]) -> tuple[Array, Array, dict[str, Array]]:
        logits, alpha, beta = outputs
        v = 2.0 * winrate(alpha, beta, recorded["kbar"]) - 1.0
        return logits, v, {"alpha_std": jnp.std(alpha), "beta_std": jnp.std(beta)}

    def value_loss(self, outputs: tuple[Array, ...], value: Array, target: Array) -> Array:
        del outputs
        return squared_error(value, target)


@struct.dataclass
class SlotStarts:
    """Per game slot ([B]): the branch points picked so far in the slot's game (None without branching), and
    whether the slot's game began at a branch point (such games do not branch)."""

    branches: BranchPoints | None
    branch_game: Array


@dataclasses.dataclass(frozen=True)
class KomiStarts:
    """SAI's game starts: new games draw their komi from the empty board's sigmoid (a share keeps the official
    komi); positions of finished standard games branch, with an even komi, into a start-state queue
    (`azjax.methods.start_states`) that restarting slots draw from before starting a new game.

    heads: the network's heads (`network_heads`); max_komi: the largest |komi| drawn (intersections + 0.5).
    """

    game: Game
    heads: Heads
    official_share: float
    branch_prob: float
    max_branches: int
    max_komi: float
    columns: tuple[str, ...] = ("empty_board_black_lead", "empty_board_beta", "branch_starts", "branches_queued",
                                "new_games", "new_game_komi_mean", "new_game_komi_std", "start_queue_size")
    # Whether games branch: branch_prob > 0 and max_branches > 0 unless given (a sweep passes it, with
    # branch_prob traced).
    branching: bool | None = None

    def __post_init__(self) -> None:
        if self.branching is None:
            object.__setattr__(self, "branching", bool(self.branch_prob > 0 and self.max_branches > 0))

    def empty_board_sigmoid(self, params: Any) -> tuple[Array, Array]:
        """(alpha0, beta0): the net's sigmoid for the empty board, Black to move (alpha0 = Black's lead)."""
        empty = jax.tree.map(lambda x: x[None], self.game.init(jax.random.key(0)))
        _, alpha, beta = self.heads(params, empty)
        return alpha[0], beta[0]

    def _new_komi(self, key: Array, empty_sigmoid: tuple[Array, Array], n: int) -> Array:
        alpha0, beta0 = empty_sigmoid
        return new_game_komi(key, alpha0, beta0, (n,), self.game.komi, self.official_share, self.max_komi)

    def init(self, key: Array, params: Any, games: GameState, pool_size: int) -> tuple[GameState, Any, Any]:
        b = games.komi.shape[0]
        games = games.replace(komi=self._new_komi(jax.random.fold_in(key, 1), self.empty_board_sigmoid(params), b))
        branches = init_branch_points(games, self.max_branches) if self.branching else None
        pool = ss.init(jax.tree.map(lambda x: x[0], games), pool_size)
        return games, SlotStarts(branches=branches, branch_game=jnp.zeros((b,), jnp.bool_)), pool

    def prepare(self, params: Any) -> tuple[Array, Array]:
        return self.empty_board_sigmoid(params)

    def restart(self, key: Array, params: Any, context: Any, states: GameState, searched: Searched,
                slots: SlotStarts, pool: ss.StartStates,
                ended: Array) -> tuple[GameState, SlotStarts, ss.StartStates, dict[str, Array]]:
        """Branch starts from the queue first (oldest first), then new games with komi from the empty board's
        sigmoid (`context`). Before that, this move's positions of standard games (not of branch games) may
        become branch points, and the branch points of the games that ended join the queue."""
        del searched
        b = ended.shape[0]
        k_branch, k_komi, k_games = jax.random.split(key, 3)
        branches, stats = slots.branches, {}
        if self.branching:
            _, alpha, _ = self.heads(params, states)
            alpha_black = black_board_lead(alpha, black_to_move(states))
            branches = record_branch_points(branches, k_branch, states, alpha_black, self.branch_prob,
                                            self.max_komi, active=~slots.branch_game)
            points, mask, branches = take_branch_points(branches, ended)
            pool = ss.push(pool, points, mask)
            stats["branches_queued"] = mask.sum(dtype=jnp.int32)
        pool, queued, got = ss.pop(pool, ended)
        komi = self._new_komi(k_komi, context, b)
        fresh = jax.vmap(self.game.init)(jax.random.split(k_games, b), komi)
        games = where_games(got, queued, fresh)
        new = ended & ~got
        stats.update(branch_starts=got.sum(dtype=jnp.int32), new_games=new.sum(dtype=jnp.int32),
                     new_game_komi_sum=jnp.where(new, komi, 0.0).sum(),
                     new_game_komi_sq_sum=jnp.where(new, komi**2, 0.0).sum())
        slots = SlotStarts(branches=branches, branch_game=jnp.where(ended, got, slots.branch_game))
        return games, slots, pool, stats

    def step_metrics(self, context: Any, pool: ss.StartStates) -> tuple[dict[str, Array], dict[str, Array]]:
        alpha0, beta0 = context  # the sigmoid of the empty board (Black to move) before this step's SGD
        return {"start_queue_size": pool.size}, {"empty_board_black_lead": alpha0, "empty_board_beta": beta0}

    def row(self, m: dict[str, Any]) -> dict[str, Any]:
        new = int(m["new_games"])
        mean = float(m["new_game_komi_sum"]) / new if new else float("nan")
        var = float(m["new_game_komi_sq_sum"]) / new - mean**2 if new else float("nan")
        return dict(empty_board_black_lead=float(m["empty_board_black_lead"]),
                    empty_board_beta=float(m["empty_board_beta"]), branch_starts=int(m["branch_starts"]),
                    branches_queued=int(m.get("branches_queued", 0)), new_games=new, new_game_komi_mean=mean,
                    new_game_komi_std=math.sqrt(max(var, 0.0)) if new else float("nan"),
                    start_queue_size=int(m["start_queue_size"]))


# ---------------------------------------------------------------- read-outs


@dataclasses.dataclass(frozen=True)
class Readout:
    """A position's sigmoid, host-side.

    alpha: the player to move's expected board lead; beta: the slope; black: Black is to move;
    komi: the game's komi.
    """

    alpha: float
    beta: float
    black: bool
    komi: float

    @property
    def black_lead(self) -> float:
        """Black's expected lead on the board (before komi)."""
        return self.alpha if self.black else -self.alpha

    @property
    def score_lead(self) -> float:
        """alpha + kbar: the player to move's expected margin after komi."""
        return self.alpha + (-self.komi if self.black else self.komi)

    def black_winrate(self, komi: float | None = None) -> float:
        """Black's winrate at `komi` (default the game's): sigmoid(beta (black_lead - komi))."""
        komi = self.komi if komi is None else komi
        return float(1.0 / (1.0 + np.exp(-self.beta * (self.black_lead - komi))))

    def winrate(self, komi: float | None = None) -> float:
        """The player to move's winrate at `komi` (default the game's)."""
        p = self.black_winrate(komi)
        return p if self.black else 1.0 - p

    def komi_table(self, half_width: int = 8) -> list[tuple[float, float]]:
        """(komi, Black's winrate) for komi from the even komi 0.5 + floor(black_lead) - half_width to
        + half_width in steps of 1, plus the game's komi if outside that range."""
        centre = 0.5 + math.floor(self.black_lead)
        komis = {centre + d for d in range(-half_width, half_width + 1)} | {self.komi}
        return [(k, self.black_winrate(k)) for k in sorted(komis)]

    def to_dict(self) -> dict[str, Any]:
        return dict(alpha=self.alpha, beta=self.beta, black_to_move=self.black, komi=self.komi,
                    black_lead=self.black_lead, score_lead=self.score_lead, winrate=self.winrate(),
                    black_winrate=self.black_winrate(),
                    komi_table=[dict(komi=k, black_winrate=p) for k, p in self.komi_table()])


def readout(heads: Heads, params: Any, state: GameState) -> Readout:
    """The sigmoid of a SAI network at one unbatched Go position; `heads` as `network_heads` gives (jitted
    by the caller: `azjax.build.jitted_sai_heads`)."""
    batch = jax.tree.map(lambda x: jnp.asarray(x)[None], state)
    _, alpha, beta = jax.device_get(heads(params, batch))
    return Readout(alpha=float(alpha[0]), beta=float(beta[0]), black=bool(np.asarray(black_to_move(state))),
                   komi=float(state.komi))


def readout_lines(r: Readout) -> list[str]:
    """Human-readable read-out: score estimate, beta, winrate at the game's komi, winrate against komi."""
    mover = "Black" if r.black else "White"

    def side(lead: float) -> str:
        return f"{'Black' if lead >= 0 else 'White'} +{abs(lead):.1f}"

    lines = [
        f"score estimate: {side(r.black_lead)} on the board; {side(r.black_lead - r.komi)} after komi {r.komi:g} "
        f"(alpha + kbar = {r.score_lead:+.2f} for {mover}, to move)",
        f"beta {r.beta:.4f} (winrate from 27% to 73% over {2 / r.beta:.1f} points of komi)",
        f"winrate at komi {r.komi:g}: {mover} {r.winrate():.1%} (Black {r.black_winrate():.1%})",
        "   komi  Black winrate",
    ]
    for k, p in r.komi_table():
        lines.append(f"{k:7.1f}  {p:8.1%}{'  <- game komi' if k == r.komi else ''}")
    return lines

