"""The AlphaZero loop as one jitted step: self-play moves -> replay -> SGD.

    trainer = Trainer(config)
    state = trainer.init(seed)                 # games in flight, replay, params, optimizer, PRNG
    state, metrics = trainer.step(state)       # one loop step, entirely on device

One loop step, in AlphaZero's terms:

    repeat moves_per_step times:                 # every game in flight advances one move
        pi = search(root = current positions)    # PUCT or Gumbel root, noise at the root
        a  ~ pi for the first k moves of each trajectory, the search's own choice afterwards
        replay <- (observation, pi target, player to move)
        play a; games that end give their outcome z to all their stored positions
        finished games restart at once
    repeat sgd_steps_per_step times (once the replay holds min_replay_size finished positions):
        theta <- theta - lr * grad[ CE(pi, p) + (z - v)^2 + c ||theta||^2 ]

With `value_head="sai"` (SAI, METHODS.md section 2; Go) the value is the winrate of the net's sigmoid
rho(0) = sigmoid(beta (alpha + kbar)), every replay entry keeps its signed komi kbar, new games draw
their komi from the empty board's sigmoid, and positions of finished games branch (with an even komi)
into a device-resident start-state queue (`azjax.start_states`) that restarting slots draw from before
the initial position. With the default `value_head="tanh"` none of this exists in the computation.

The step runs data-parallel under `jax.shard_map` over a 1-D mesh of all devices (across hosts
after `jax.distributed.initialize()`): games and replay are split along the `data` axis,
parameters and optimizer state are replicated, gradients are averaged with `pmean` (an XLA
all-reduce). Each device draws its own random numbers by folding its index into the shared key.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from azjax import replay as rb
from azjax import sai
from azjax import start_states as ss
from azjax.augment import augment
from azjax.build import config_game, init_params, make_evaluator, make_network
from azjax.config import Config
from azjax.games import Game, GameState
from azjax.network import PolicyValueNet, head_health
from azjax.search import SearchSpec, choose_move, root_visit_counts, run_search

AXIS = "data"


@struct.dataclass
class Actors:
    """The games in flight, [B] each.

    state: the games. game_id: per-slot counter of games started in that slot.
    first_player: player id who moved first (for the win/draw/loss split).
    trajectory_moves: moves since the trajectory's start (the temperature window counts these).
    branches: SAI only: the branch points picked so far in each slot's game (None otherwise).
    branch_game: SAI only: bool [B], the slot's game began at a branch point (such games do not branch).
    """

    state: GameState
    game_id: jax.Array
    first_player: jax.Array
    trajectory_moves: jax.Array
    branches: sai.BranchPoints | None = None
    branch_game: jax.Array | None = None


@struct.dataclass
class LoopState:
    actors: Actors
    replay: rb.Replay
    params: Any
    opt_state: Any
    key: jax.Array
    step: jax.Array  # loop steps done
    moves: jax.Array  # self-play moves done by every slot (decides where the replay writes)
    starts: ss.StartStates | None = None  # SAI: branch starts waiting for a slot (per device)


def loss_fn(apply_fn: Callable, params: Any, obs: jax.Array, policy: jax.Array, value: jax.Array,
            value_loss_weight: float = 1.0, kbar: jax.Array | None = None) -> tuple[jax.Array, dict[str, jax.Array]]:
    """AlphaZero's loss: policy cross-entropy + value MSE. The L2 term is applied as AdamW's decoupled
    weight decay (see `make_optimizer`); its size is reported as `l2`.

    apply_fn(params, obs) -> (network outputs, head health dict) (`with_head_health(net.apply)`).
    obs [B, ...], policy [B, A] (target distribution), value [B] (target z).
    SAI (`kbar` [B] given, outputs (logits, alpha, beta)): the value is v = 2 rho(0) - 1 with
    rho(0) = sigmoid(beta (alpha + kbar)), so the value loss is (z - (2 rho(0) - 1))^2.
    The info holds head health too: the std over the batch of each scalar head's output (`value_std`, or
    `alpha_std` and `beta_std`) and the heads' active-unit fractions.
    """
    outputs, health = apply_fn(params, obs)
    if kbar is None:
        logits, v = outputs
        spread = {"value_std": jnp.std(v)}
    else:
        logits, alpha, beta = outputs
        v = 2.0 * sai.winrate(alpha, beta, kbar) - 1.0
        spread = {"alpha_std": jnp.std(alpha), "beta_std": jnp.std(beta)}
    policy_loss = optax.softmax_cross_entropy(logits, policy).mean()
    value_loss = jnp.mean((v - value) ** 2)
    l2 = sum(jnp.sum(w**2) for w in jax.tree.leaves(params) if w.ndim > 1)
    total = policy_loss + value_loss_weight * value_loss
    entropy = -jnp.sum(jnp.where(policy > 0, policy * jnp.log(policy + 1e-12), 0.0), axis=-1).mean()
    return total, {
        "loss": total,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "l2": l2,
        "policy_target_entropy": entropy,
        **jax.lax.stop_gradient(spread),
        **health,
    }


def with_head_health(apply_fn: Callable) -> Callable:
    """`apply_fn(params, obs)` of a `PolicyValueNet` -> (outputs, head health) in one forward pass."""

    def apply(params: Any, obs: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
        outputs, variables = apply_fn(params, obs, mutable=["intermediates"])
        return outputs, head_health(variables["intermediates"])

    return apply


def make_optimizer(config: Config) -> optax.GradientTransformation:
    total = max(config.num_steps * config.sgd_steps_per_step, config.lr_warmup_steps + 1)
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0,
        peak_value=config.learning_rate,
        warmup_steps=config.lr_warmup_steps,
        decay_steps=total,
        end_value=config.learning_rate * config.lr_end_fraction,
    )
    # Decoupled weight decay (AdamW): an L2 term inside Adam's normalised update would shrink every
    # weight with a small data gradient at the full learning rate.
    return optax.chain(optax.clip_by_global_norm(1.0),
                       optax.adamw(schedule, weight_decay=config.weight_decay, mask=_is_kernel))


def _is_kernel(params: Any) -> Any:
    """Decay weight matrices and conv kernels, not biases or norm scales."""
    return jax.tree.map(lambda w: w.ndim > 1, params)


@dataclasses.dataclass(frozen=True)
class LocalSizes:
    """Per-device sizes."""

    num_devices: int
    num_envs: int
    replay_size: int
    batch_size: int
    start_queue_size: int = 1


def local_sizes(config: Config, num_devices: int) -> LocalSizes:
    for name in ("num_envs", "batch_size"):
        if getattr(config, name) % num_devices:
            raise ValueError(f"{name}={getattr(config, name)} is not divisible by the {num_devices} devices")
    envs = config.num_envs // num_devices
    replay = (config.replay_size // num_devices) // envs * envs
    if replay < envs:
        raise ValueError(f"replay_size={config.replay_size} is smaller than num_envs={config.num_envs}")
    queue = max(1, config.start_queue_size // num_devices)
    return LocalSizes(num_devices, envs, replay, config.batch_size // num_devices, queue)


class Trainer:
    """Builds and holds the jitted init and step functions for one config."""

    def __init__(self, config: Config, devices: list[jax.Device] | None = None):
        self.config = config
        self.game: Game = config_game(config)
        self.net: PolicyValueNet = make_network(config, self.game)
        self.evaluate = make_evaluator(config, self.game, self.net)
        self.sai = config.value_head == "sai"
        self.q_mixed_targets = config.value_target_q_weight > 0  # replay keeps root values q
        if self.sai:
            self.heads = sai.network_heads(self.net.apply)
            self.branching = config.branch_prob > 0 and config.max_branches > 0
            self.max_komi = self.game.size ** 2 + 0.5  # type: ignore[attr-defined]
        self.spec = SearchSpec.from_config(config, training=True)
        self.sgd_info_keys = sorted(jax.eval_shape(self._sgd_info_shapes).keys())
        self.optimizer = make_optimizer(config)
        devices = list(devices) if devices is not None else jax.devices()
        self.mesh = Mesh(np.array(devices), (AXIS,))
        self.sizes = local_sizes(config, len(devices))
        self._obs_dtype = jax.eval_shape(lambda k: self.game.init(k).observation, jax.random.key(0)).dtype

        specs = self.state_specs()
        self.shardings = jax.tree.map(lambda s: NamedSharding(self.mesh, s), specs,
                                      is_leaf=lambda x: isinstance(x, P))
        init_local = jax.shard_map(self._init_local, mesh=self.mesh, in_specs=P(), out_specs=specs,
                                   check_vma=False)
        self._init = jax.jit(init_local, out_shardings=self.shardings)
        step_local = jax.shard_map(self._step_local, mesh=self.mesh, in_specs=(specs,),
                                   out_specs=(specs, P()), check_vma=False)
        self._step = jax.jit(step_local, in_shardings=(self.shardings,),
                             out_shardings=(self.shardings, None), donate_argnums=0)

    def _sgd_info_shapes(self) -> dict[str, Any]:
        """The names of the SGD step's metrics (losses and head health) for this config's network."""
        obs = jnp.zeros((2, *self.game.observation_shape), jnp.float32)
        params = init_params(self.net, self.game, jax.random.key(0))
        policy = jnp.full((2, self.game.num_actions), 1.0 / self.game.num_actions)
        kbar = jnp.zeros((2,)) if self.sai else None
        return loss_fn(with_head_health(self.net.apply), params, obs, policy, jnp.zeros((2,)), 1.0, kbar)[1]

    # ----- public -----

    def init(self, seed: int) -> LoopState:
        return self._init(jax.random.key_data(jax.random.key(seed)))

    def step(self, state: LoopState) -> tuple[LoopState, dict[str, jax.Array]]:
        return self._step(state)

    def state_specs(self) -> LoopState:
        """PartitionSpecs: games and replay split along the device axis, the rest replicated."""
        abstract = jax.eval_shape(self._init_local, jax.random.key_data(jax.random.key(0)))
        sharded = P(AXIS)
        return LoopState(
            actors=jax.tree.map(lambda _: sharded, abstract.actors),
            replay=jax.tree.map(lambda _: sharded, abstract.replay),
            params=jax.tree.map(lambda _: P(), abstract.params),
            opt_state=jax.tree.map(lambda _: P(), abstract.opt_state),
            key=P(),
            step=P(),
            moves=P(),
            starts=jax.tree.map(lambda _: sharded, abstract.starts),
        )

    # ----- device-local pieces (run inside shard_map) -----

    def _device_key(self, key: jax.Array) -> jax.Array:
        """This device's own key: without it every device would play the same games."""
        try:
            index = jax.lax.axis_index(AXIS)
        except NameError:  # outside shard_map (eval_shape of the local init)
            index = 0
        return jax.random.fold_in(key, index)

    def _new_games(self, key: jax.Array, n: int) -> GameState:
        return jax.vmap(self.game.init)(jax.random.split(key, n))

    def _init_local(self, key_data: jax.Array) -> LoopState:
        key = jax.random.wrap_key_data(key_data)
        k_params, k_games, k_loop = jax.random.split(key, 3)
        params = init_params(self.net, self.game, k_params)  # same on every device
        b = self.sizes.num_envs
        games = self._new_games(self._device_key(k_games), b)
        branches, branch_game, starts = None, None, None
        if self.sai:
            branch_game = jnp.zeros((b,), jnp.bool_)
            k_komi = jax.random.fold_in(self._device_key(k_games), 1)
            games = games.replace(komi=self._new_komi(k_komi, self._empty_board_sigmoid(params), b))
            if self.branching:
                branches = sai.init_branch_points(games, self.config.max_branches)
            starts = ss.init(jax.tree.map(lambda x: x[0], games), self.sizes.start_queue_size)
        actors = Actors(
            state=games,
            game_id=jnp.zeros((b,), jnp.int32),
            first_player=games.current_player,
            trajectory_moves=jnp.zeros((b,), jnp.int32),
            branches=branches,
            branch_game=branch_game,
        )
        replay = rb.init_replay(self.sizes.replay_size, self.game.observation_shape, self._obs_dtype,
                                self.game.num_actions, with_kbar=self.sai,
                                with_root_value=self.q_mixed_targets)
        return LoopState(
            actors=actors,
            replay=replay,
            params=params,
            opt_state=self.optimizer.init(params),
            key=jax.random.key_data(k_loop),
            step=jnp.int32(0),
            moves=jnp.int32(0),
            starts=starts,
        )

    # ----- SAI pieces (value_head="sai" only) -----

    def _empty_board_sigmoid(self, params: Any) -> tuple[jax.Array, jax.Array]:
        """(alpha0, beta0): the net's sigmoid for the empty board, Black to move (alpha0 = Black's lead)."""
        empty = jax.tree.map(lambda x: x[None], self.game.init(jax.random.key(0)))
        _, alpha, beta = self.heads(params, empty)
        return alpha[0], beta[0]

    def _new_komi(self, key: jax.Array, empty_sigmoid: tuple[jax.Array, jax.Array], n: int) -> jax.Array:
        alpha0, beta0 = empty_sigmoid
        return sai.new_game_komi(key, alpha0, beta0, (n,), self.game.komi, self.config.sai_official_komi_share,
                                 self.max_komi)

    def _sai_restarts(self, params: Any, empty_sigmoid: tuple[jax.Array, jax.Array], key: jax.Array,
                      actors: Actors, ended: jax.Array, starts: ss.StartStates):
        """The games that restart the `ended` slots: branch starts from the queue first (oldest first),
        then new games with komi from the empty board's sigmoid. Before that, this move's positions of
        standard games (not of branch games) may become branch points, and the branch points of the games
        that ended join the queue.

        Returns (games [B] for the ended slots, which of them are branch starts [B], branch points, queue,
        statistics).
        """
        b = self.sizes.num_envs
        k_branch, k_komi, k_games = jax.random.split(key, 3)
        branches, stats = actors.branches, {}
        if self.branching:
            state = actors.state
            _, alpha, _ = self.heads(params, state)
            alpha_black = sai.black_board_lead(alpha, sai.black_to_move(state))
            branches = sai.record_branch_points(branches, k_branch, state, alpha_black, self.config.branch_prob,
                                                self.max_komi, active=~actors.branch_game)
            points, mask, branches = sai.take_branch_points(branches, ended)
            starts = ss.push(starts, points, mask)
            stats["branches_queued"] = mask.sum(dtype=jnp.int32)
        starts, queued, got = ss.pop(starts, ended)
        komi = self._new_komi(k_komi, empty_sigmoid, b)
        fresh = jax.vmap(self.game.init)(jax.random.split(k_games, b), komi)
        pick = lambda q, f: jnp.where(got.reshape(-1, *([1] * (f.ndim - 1))), q, f)  # noqa: E731
        games = jax.tree.map(pick, queued, fresh)
        new = ended & ~got
        stats.update(branch_starts=got.sum(dtype=jnp.int32), new_games=new.sum(dtype=jnp.int32),
                     new_game_komi_sum=jnp.where(new, komi, 0.0).sum(),
                     new_game_komi_sq_sum=jnp.where(new, komi**2, 0.0).sum())
        return games, got, branches, starts, stats

    def _selfplay_move(self, params: Any, empty_sigmoid: Any, carry: tuple[Actors, rb.Replay, jax.Array, Any],
                       key: jax.Array):
        """Advances every game in flight by one move; returns per-move statistics.

        carry: (actors, replay, moves, start-state queue or None); empty_sigmoid: SAI's (alpha0, beta0)
        for this step's params, else None.
        """
        actors, replay, moves, starts = carry
        k_search, k_act, k_new = jax.random.split(key, 3)
        state = actors.state
        out = run_search(self.spec, self.game, self.evaluate, params, k_search, state)
        explore = actors.trajectory_moves < self.config.temperature_moves
        action = choose_move(self.spec, k_act, out, explore)
        visits = jnp.take_along_axis(root_visit_counts(out), action[:, None], axis=1)[:, 0]

        ptr = (moves * self.sizes.num_envs) % self.sizes.replay_size
        kbar = sai.signed_komi(state.komi, sai.black_to_move(state)) if self.sai else None
        root_value = out.search_tree.node_values[:, 0] if self.q_mixed_targets else None
        replay = rb.write(replay, ptr, state.observation, out.action_weights, state.current_player,
                          actors.game_id, kbar=kbar, root_value=root_value)

        next_state = jax.vmap(self.game.step)(state, action)
        ended = next_state.terminated
        replay = rb.fill_outcomes(replay, ended, actors.game_id, next_state.rewards)

        # Results of the games that ended, from the first mover's view.
        first_reward = jnp.take_along_axis(next_state.rewards, actors.first_player[:, None], axis=1)[:, 0]
        stats = {
            "games": ended.sum(),
            "first_player_wins": (ended & (first_reward > 0)).sum(),
            "draws": (ended & (first_reward == 0)).sum(),
            "first_player_losses": (ended & (first_reward < 0)).sum(),
            "game_length_sum": jnp.where(ended, actors.trajectory_moves + 1, 0).sum(),
            "root_value": out.search_tree.node_values[:, 0].mean(),
            # Moves after the temperature window that the search never visited: 0 by construction.
            "unvisited_greedy_moves": (~explore & ~state.terminated & (visits == 0)).sum(),
            "window_moves": (explore & ~state.terminated).sum(),  # moves drawn from the policy target
        }

        # Finished games restart at once (SAI: from a queued branch start if there is one).
        branches, branch_game = actors.branches, actors.branch_game
        if self.sai:
            fresh, from_branch, branches, starts, sai_stats = self._sai_restarts(params, empty_sigmoid, k_new, actors,
                                                                                 ended, starts)
            branch_game = jnp.where(ended, from_branch, branch_game)
            stats.update(sai_stats)
        else:
            fresh = self._new_games(k_new, self.sizes.num_envs)
        restart = lambda new, old: jnp.where(ended.reshape(-1, *([1] * (old.ndim - 1))), new, old)  # noqa: E731
        actors = Actors(
            state=jax.tree.map(restart, fresh, next_state),
            game_id=actors.game_id + ended.astype(jnp.int32),
            first_player=jnp.where(ended, fresh.current_player, actors.first_player),
            trajectory_moves=jnp.where(ended, 0, actors.trajectory_moves + 1),
            branches=branches,
            branch_game=branch_game,
        )
        return (actors, replay, moves + 1, starts), stats

    def _sgd_step(self, carry: tuple[Any, Any], key: jax.Array, replay: rb.Replay):
        params, opt_state = carry
        k_sample, k_aug = jax.random.split(key)
        idx = rb.sample_indices(replay, k_sample, self.sizes.batch_size)
        obs, policy = replay.obs[idx], replay.policy[idx]
        value = rb.value_targets(replay, idx, self.config.value_target_q_weight)
        kbar = None if replay.kbar is None else replay.kbar[idx]  # SAI: the loss forms rho(0) with it
        if self.config.augment:
            obs, policy = augment(self.game, k_aug, obs, policy)
        grad_fn = jax.grad(functools.partial(loss_fn, with_head_health(self.net.apply)), has_aux=True)
        grads, info = grad_fn(params, obs, policy, value, self.config.value_loss_weight, kbar)
        grads = jax.lax.pmean(grads, AXIS)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), jax.lax.pmean(info, AXIS)

    def _step_local(self, s: LoopState) -> tuple[LoopState, dict[str, jax.Array]]:
        cfg = self.config
        key = jax.random.wrap_key_data(s.key)
        key, k_play, k_sgd = jax.random.split(key, 3)

        # 1. Self-play.
        move_keys = jax.random.split(self._device_key(k_play), cfg.moves_per_step)
        empty_sigmoid = self._empty_board_sigmoid(s.params) if self.sai else None
        (actors, replay, moves, starts), stats = jax.lax.scan(
            functools.partial(self._selfplay_move, s.params, empty_sigmoid), (s.actors, s.replay, s.moves, s.starts),
            move_keys)
        stats = {k: (v.mean() if k == "root_value" else v.sum()) for k, v in stats.items()}
        if self.sai:
            stats["start_queue_size"] = starts.size

        # 2. SGD, once the replay holds enough finished positions (on every device).
        num_targets = jax.lax.pmin(replay.has_target.sum(), AXIS)
        ready = (num_targets * self.sizes.num_devices >= cfg.min_replay_size) & (cfg.sgd_steps_per_step > 0)

        # No lax.cond here: on XLA's CPU backend, convolution gradients inside control flow (cond,
        # while) run ~10x slower. Before the replay is ready the steps run and their result is dropped.
        sgd_keys = jax.random.split(self._device_key(k_sgd), max(cfg.sgd_steps_per_step, 1))
        if cfg.sgd_steps_per_step > 0:
            (params, opt_state), info = jax.lax.scan(
                functools.partial(self._sgd_step, replay=replay), (s.params, s.opt_state), sgd_keys, unroll=True)
            info = jax.tree.map(jnp.mean, info)
        else:
            params, opt_state, info = s.params, s.opt_state, {}
        keep = lambda new, old: jnp.where(ready, new, old)  # noqa: E731
        params = jax.tree.map(keep, params, s.params)
        opt_state = jax.tree.map(keep, opt_state, s.opt_state)
        nan = jnp.float32(jnp.nan)
        info = {k: jnp.where(ready, info[k], nan) if k in info else nan
                for k in self.sgd_info_keys}

        stats = jax.tree.map(lambda x: jax.lax.psum(x, AXIS), stats)
        stats["root_value"] = stats["root_value"] / self.sizes.num_devices
        metrics = {
            **stats,
            **info,
            "sgd_applied": ready,
            "replay_positions": num_targets * self.sizes.num_devices,
        }
        if self.sai:  # the sigmoid of the empty board (Black to move) before this step's SGD
            metrics["empty_board_black_lead"], metrics["empty_board_beta"] = empty_sigmoid
        new = LoopState(actors=actors, replay=replay, params=params, opt_state=opt_state,
                        key=jax.random.key_data(key), step=s.step + 1, moves=moves, starts=starts)
        return new, metrics
