"""The AlphaZero loop as one jitted step: self-play moves -> replay -> SGD.

    trainer = Trainer(config)
    state = trainer.init(seed)                 # games in flight, replay, params, optimizer, PRNG
    state, metrics = trainer.step(state)       # one loop step, entirely on device
    trainer.abstract_state()                   # the state's shapes and shardings, nothing computed
    trainer.lower_step()                       # the step lowered for XLA (`.compile()`, memory analysis)

Inside `shard_map`, one device's part of them: `init_local`, `step_local` (what a sweep runs for each run) and
`sgd_step` (one optimizer step on this device's replay). Everything else of `Trainer` is its own.

One loop step, in AlphaZero's terms:

    repeat moves_per_step times:                 # every game in flight advances one move
        pi = search(root = current positions)    # PUCT or Gumbel root, noise at the root
        a  ~ pi for the first k moves of each trajectory, the search's own choice afterwards
        replay <- (observation, pi target, player to move)
        play a; games that end give their outcome z to all their stored positions
        finished games restart at once
    repeat sgd_steps_per_step times (once the replay holds min_replay_size finished positions):
        theta <- theta - lr * grad[ CE(pi, p) + (z - v)^2 + c ||theta||^2 ]

The loop knows no method: it calls five seams (`azjax.methods.alphazero`), which `azjax.build` fills from
the config (`Seams`), AlphaZero's behaviour by default:

    search policy how positions are searched and which train (AZ: one search, all; playout caps: full or fast)
    value head    how net outputs become the search's and the loss's value (AZ: tanh; SAI: sigmoid in komi)
    game starts   where a restarting slot's game comes from (AZ: game.init; SAI: komi draw, branch queue;
                  Go-Exploit: an archive of visited or searched states)
    targets       what the replay records and the value target (AZ: z, or the z/q mix; TDLeaf: lambda-returns)
    auxiliary     what else finished games teach, as extra loss terms (AZ: nothing; KataGo: ownership, score)

The step runs data-parallel under `jax.shard_map` over a 1-D mesh of all devices (across hosts
after `jax.distributed.initialize()`): games and replay are split along the `data` axis,
parameters and optimizer state are replicated, gradients are averaged with `pmean` (an XLA
all-reduce). Each device draws its own random numbers by folding its index into the shared key.
"""

from __future__ import annotations

import copy
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
from azjax.build import Built, build_loop, init_params, start_pool_size
from azjax.config import Config
from azjax.games import Game, GameState, where_games
from azjax.methods.alphazero import (
    AuxiliaryTargets,
    GameStarts,
    Records,
    Searched,
    SearchPolicy,
    Targets,
    ValueHead,
)
from azjax.network import AUXILIARY, PolicyValueNet, auxiliary_outputs, head_health
from azjax.search import SearchSpec, choose_move, root_visit_counts
from azjax.search.layout import to_slots

AXIS = "data"


@struct.dataclass
class GamesInFlight:
    """The games in flight, [B] each.

    state: the games. game_id: per-slot counter of games started in that slot.
    first_player: player id who moved first (for the win/draw/loss split).
    trajectory_moves: moves since the trajectory's start (the temperature window counts these).
    slots: the game-starts seam's per-slot state ([B] leading axis; e.g. SAI's branch points), or None.
    """

    state: GameState
    game_id: jax.Array
    first_player: jax.Array
    trajectory_moves: jax.Array
    slots: Any = None


@struct.dataclass
class LoopState:
    """Everything one loop step reads and writes, on device. (`actors` keeps its name: checkpoints key on it.)"""

    actors: GamesInFlight  # the self-play games in flight
    replay: rb.Replay
    params: Any
    opt_state: Any
    key: jax.Array
    step: jax.Array  # loop steps done
    moves: jax.Array  # self-play moves done by every slot (decides where the replay writes)
    starts: Any = None  # the game-starts seam's pool, per device (e.g. SAI's queue of branch starts), or None
    params_average: Any = None  # the averaged weights (`swa_decay` > 0), or None

    @property
    def exported_params(self) -> Any:
        """The weights the run gives out: the average where the run keeps one, else the trained weights."""
        return self.params if self.params_average is None else self.params_average


def loss_fn(apply_fn: Callable, value: ValueHead, params: Any, obs: jax.Array, policy: jax.Array,
            target: jax.Array, value_loss_weight: float = 1.0, recorded: Records | None = None,
            auxiliary: AuxiliaryTargets | None = None,
            auxiliary_targets: Records | None = None) -> tuple[jax.Array, dict[str, jax.Array]]:
    """AlphaZero's loss: policy cross-entropy + value MSE (the value-head seam's term: the win/draw/loss head's is
    a cross-entropy), plus the auxiliary-targets seam's weighted terms
    (`auxiliary`, with the sampled `auxiliary_targets`; AlphaZero: none). The L2 term is applied as AdamW's
    decoupled weight decay (see `make_optimizer`); its size is reported as `l2`.

    apply_fn(params, obs) -> (network outputs, head health dict) (`with_head_health(net.apply)`); the dict's
    entry `AUXILIARY`, where there is one, holds the auxiliary heads' outputs.
    value: the value-head seam, which turns the outputs into (logits, v) with the positions' records
    (`recorded`, name -> [B]; SAI: kbar, with v = 2 rho(0) - 1).
    obs [B, ...], policy [B, A] (target distribution), target [B] (value target, e.g. z).
    The info holds head health too: the std over the batch of each scalar head's output (`value_std`, or
    SAI's `alpha_std` and `beta_std`) and the heads' active-unit fractions.
    """
    outputs, health = apply_fn(params, obs)
    health = dict(health)
    predictions = health.pop(AUXILIARY, {})
    logits, v, spread = value.train_value(outputs, recorded or {})
    policy_loss = optax.softmax_cross_entropy(logits, policy).mean()
    value_loss = value.value_loss(outputs, v, target)
    l2 = sum(jnp.sum(w**2) for w in jax.tree.leaves(params) if w.ndim > 1)
    total = policy_loss + value_loss_weight * value_loss
    terms, auxiliary_info = auxiliary.loss(predictions, auxiliary_targets or {}) if auxiliary else ((), {})
    for term in terms:
        total = total + term
    entropy = -jnp.sum(jnp.where(policy > 0, policy * jnp.log(policy + 1e-12), 0.0), axis=-1).mean()
    return total, {
        "loss": total,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "l2": l2,
        "policy_target_entropy": entropy,
        **jax.lax.stop_gradient(spread),
        **health,
        **auxiliary_info,
    }


def with_head_health(apply_fn: Callable) -> Callable:
    """`apply_fn(params, obs)` of a `PolicyValueNet` -> (outputs, head health) in one forward pass; with
    KataGo's auxiliary heads, the health dict's entry `AUXILIARY` holds their outputs (`auxiliary_outputs`)."""

    def apply(params: Any, obs: jax.Array) -> tuple[Any, dict[str, Any]]:
        outputs, variables = apply_fn(params, obs, mutable=["intermediates", AUXILIARY])
        health: dict[str, Any] = head_health(variables["intermediates"])
        predictions = auxiliary_outputs(variables)
        if predictions:
            health[AUXILIARY] = predictions
        return outputs, health

    return apply


def make_optimizer(config: Config) -> optax.GradientTransformation:
    total = max(config.num_steps * config.sgd_steps_per_step, config.lr_warmup_steps + 1)
    lr, end = config.learning_rate, config.lr_end_fraction
    # optax's warmup-cosine schedule, spelled out because optax compares the peak with 0 in Python, which a
    # sweep's traced learning rate cannot do; the same operations, so the same values bit for bit.
    alpha = lr * end / lr if isinstance(lr, jax.core.Tracer) or lr != 0 else 0.0
    schedule = optax.join_schedules([
        optax.linear_schedule(init_value=0.0, end_value=lr, transition_steps=config.lr_warmup_steps),
        optax.cosine_decay_schedule(init_value=lr, decay_steps=total - config.lr_warmup_steps, alpha=alpha),
    ], [config.lr_warmup_steps])
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
    start_pool_size: int = 1  # the game starts' pool (SAI queue or Go-Exploit archive) on this device


def _named(fn: Callable, name: str) -> Callable:
    """`fn` under the name `name`. JAX names the program it compiles after the function it jits: the loop's
    init and step keep the names they have always had (`jit(_init_local)`, `jit(_step_local)`), which the persistent
    compilation cache's entries (`jit__step_local-...`), `lab.reliability.compile_watch.STEP_FUNCTION` and the
    committed measurements use."""

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        return fn(*args)

    call.__name__ = call.__qualname__ = name
    return call


def sgd_unroll(device: jax.Device) -> bool | int:
    """How the loop step's `lax.scan` over its SGD steps is unrolled on `device`'s platform.

    XLA's CPU backend runs convolution gradients inside a while loop ~10x slower, so CPUs unroll every step. Elsewhere
    each unrolled copy is compiled anew: 9x9's `full` preset on an H200 compiled its loop step in 76 s with 8 SGD steps
    and 399 s with 32 (results/gpu/NVIDIA_H200/loan_2026-11-27_2.json), so accelerators keep the scan rolled."""
    return True if device.platform == "cpu" else 1


def local_sizes(config: Config, num_devices: int) -> LocalSizes:
    for name in ("num_envs", "batch_size"):
        if getattr(config, name) % num_devices:
            raise ValueError(f"{name}={getattr(config, name)} is not divisible by the {num_devices} devices")
    envs = config.num_envs // num_devices
    replay = (config.replay_size // num_devices) // envs * envs
    if replay < envs:
        raise ValueError(f"replay_size={config.replay_size} is smaller than num_envs={config.num_envs}")
    queue = max(1, start_pool_size(config) // num_devices)
    return LocalSizes(num_devices, envs, replay, config.batch_size // num_devices, queue)


def replay_policy(searched: Searched) -> rb.PolicyTarget:
    """The search's policy target as the replay takes it: over the root's slots where the tree is searched over
    slots (`azjax.search.layout`; a gather of the A-wide target, zero off the legal moves, so nothing is lost), else
    the dense target [B, A] as it is."""
    moves = getattr(searched.out, "moves", None)
    if moves is None:
        return searched.policy_target
    return rb.SparsePolicy(moves, jnp.where(moves >= 0, to_slots(searched.policy_target, moves), 0.0))


class Trainer:
    """Builds and holds the jitted init and step functions for what one config builds (`azjax.build.Built`; a
    `Config` is built here, once). Tests that compare a method at its off values with AlphaZero, and new methods
    tried from Python, give a `Built` whose seams they replaced.

    What it holds, for its users: `config` and `built`; `game` and `net`; the seams `search`, `value`, `starts`,
    `targets`, `auxiliary` (with `spec`, the self-play search settings, and `evaluate`, the network evaluator);
    `optimizer`; `mesh` (the devices, along `AXIS`), `sizes` (`LocalSizes`: what each device holds), `shardings`
    (of the loop state), `sgd_unroll` and `sgd_info_keys` (the SGD step's metrics). The whole loop: `init`, `step`,
    `abstract_state`, `lower_step`, `state_specs`, `rebound`; one device's part: `init_local`, `step_local`,
    `sgd_step`, `trainable`, `sampled`, `write_positions`. Names with a leading underscore are its own.
    """

    def __init__(self, built: Built | Config, devices: list[jax.Device] | None = None):
        built = build_loop(built) if isinstance(built, Config) else built
        config = built.config
        self.game: Game = built.game
        self.net: PolicyValueNet = built.net
        self._bind(built)
        self.sgd_info_keys = sorted(jax.eval_shape(self._sgd_info_shapes).keys())
        devices = list(devices) if devices is not None else jax.devices()
        self.mesh = Mesh(np.array(devices), (AXIS,))
        self.sizes = local_sizes(config, len(devices))
        self.sgd_unroll = sgd_unroll(devices[0])
        # One position's observation as the replay stores it (`Game.pack_observation`).
        self._obs_layout = jax.eval_shape(lambda k: self.game.pack_observation(self.game.init(k).observation),
                                          jax.random.key(0))

        specs = self.state_specs()
        self.shardings = jax.tree.map(lambda s: NamedSharding(self.mesh, s), specs,
                                      is_leaf=lambda x: isinstance(x, P))
        init_local = jax.shard_map(_named(self.init_local, "_init_local"), mesh=self.mesh, in_specs=P(),
                                   out_specs=specs, check_vma=False)
        self._init = jax.jit(init_local, out_shardings=self.shardings)
        step_local = jax.shard_map(_named(self.step_local, "_step_local"), mesh=self.mesh, in_specs=(specs,),
                                   out_specs=(specs, P()), check_vma=False)
        self._step = jax.jit(step_local, in_shardings=(self.shardings,),
                             out_shardings=(self.shardings, None), donate_argnums=0)

    def _bind(self, built: Built) -> None:
        """The parts that read the config's values: the seams, the optimizer, the config itself."""
        self.built = built
        self.config = built.config
        seams = built.seams
        self.search: SearchPolicy = seams.search
        self.value: ValueHead = seams.value
        self.starts: GameStarts = seams.starts
        self.targets: Targets = seams.targets
        self.auxiliary: AuxiliaryTargets = seams.auxiliary
        self.evaluate = built.evaluate
        self.spec: SearchSpec = built.spec
        self.optimizer = make_optimizer(built.config)

    def rebound(self, config: Config) -> Trainer:
        """This trainer with `config`'s values (traced ones too: a sweep's run axis) in its seams, optimizer
        and loop; the components stay those this trainer's config picked, and so do every size and shape."""
        new = copy.copy(self)
        new._bind(self.built.with_values(config))
        return new

    def _sgd_info_shapes(self) -> dict[str, Any]:
        """The names of the SGD step's metrics (losses and head health) for this config's network."""
        obs = jnp.zeros((2, *self.game.observation_shape), jnp.float32)
        params = init_params(self.net, self.game, jax.random.key(0))
        policy = jnp.full((2, self.game.num_actions), 1.0 / self.game.num_actions)
        recorded = {name: jnp.zeros((2,)) for name in self.value.records}
        replay = rb.init_replay(2, self.game.observation_shape, jnp.float32, self.game.num_actions,
                                finals=self.auxiliary.finals)
        auxiliary_targets = self.auxiliary.sample(replay, jnp.arange(2))
        return loss_fn(with_head_health(self.net.apply), self.value, params, obs, policy, jnp.zeros((2,)), 1.0,
                       recorded, self.auxiliary, auxiliary_targets)[1]

    # ----- public: the whole loop, across the trainer's devices -----

    def init(self, seed: int) -> LoopState:
        """The loop's first state, placed on the trainer's devices (`shardings`): `num_envs` fresh games and an
        empty replay of `replay_size` entries, split along the devices; the network's initial parameters and the
        optimizer's state, replicated. The same `seed` gives the same state bit for bit."""
        return self._init(jax.random.key_data(jax.random.key(seed)))

    def step(self, state: LoopState) -> tuple[LoopState, dict[str, jax.Array]]:
        """One loop step (`step_local` on every device at once, jitted). `state` is donated: use the state it
        returns. The metrics are scalars, summed over the devices (root_value: their mean); the SGD ones are NaN
        until the replay holds `min_replay_size` trainable positions."""
        return self._step(state)

    def abstract_state(self, local: bool = False) -> LoopState:
        """The loop state's shapes and dtypes (`jax.ShapeDtypeStruct`s; nothing is computed or allocated).

        By default the whole state that `init` returns, across the trainer's devices and with its shardings: a
        template to restore a checkpoint into, or to lower the step with (`lower_step`). With `local=True` one
        device's part, as `init_local` returns it inside `shard_map`: games [sizes.num_envs], replay
        [sizes.replay_size] and the game starts' pool [sizes.start_pool_size] per device, the rest whole."""
        key_data = jax.random.key_data(jax.random.key(0))
        return jax.eval_shape(self.init_local if local else self._init, key_data)

    def lower_step(self) -> jax.stages.Lowered:
        """The jitted loop step lowered for `abstract_state()` (nothing runs): `.compile()` compiles it, and the
        compiled program's `memory_analysis()` is XLA's account of what a step holds (`azjax.train.plan`)."""
        return self._step.lower(self.abstract_state())

    def state_specs(self) -> LoopState:
        """PartitionSpecs: games and replay split along the device axis, the rest replicated."""
        abstract = self.abstract_state(local=True)
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
            params_average=jax.tree.map(lambda _: P(), abstract.params_average),
        )

    # ----- public: one device's part, run inside shard_map (the pieces a sweep, the plan and the bench reuse) -----

    def trainable(self, replay: rb.Replay) -> jax.Array:
        """bool [N]: the entries SGD samples: with their targets, and allowed by the search policy."""
        return self.targets.trainable(replay) & self.search.trainable(replay)

    def _device_key(self, key: jax.Array) -> jax.Array:
        """This device's own key: without it every device would play the same games."""
        try:
            index = jax.lax.axis_index(AXIS)
        except NameError:  # outside shard_map (eval_shape of the local init)
            index = 0
        return jax.random.fold_in(key, index)

    def init_local(self, key_data: jax.Array) -> LoopState:
        """One device's first loop state, inside `shard_map` (`init` runs it on every device).

        key_data: uint32 [2], the run's key (`jax.random.key_data`). The parameters come from it alone, so they are
        the same on every device; each device folds its index into the games' key (`_device_key`), so the devices
        play different games. Returns games [sizes.num_envs], a replay of [sizes.replay_size] entries and the game
        starts' pool, all of this device, and the parameters, optimizer state and loop key whole.

        With `step_local`, what a sweep (`azjax.train.sweep.Sweep`) runs for each of its runs, under that run's
        values (`rebound`): a trainer that overrides it changes a sweep's runs too."""
        key = jax.random.wrap_key_data(key_data)
        k_params, k_games, k_loop = jax.random.split(key, 3)
        params = init_params(self.net, self.game, k_params)  # same on every device
        b = self.sizes.num_envs
        k_games = self._device_key(k_games)
        games = jax.vmap(self.game.init)(jax.random.split(k_games, b))
        games, slots, pool = self.starts.init(k_games, params, games, self.sizes.start_pool_size)
        actors = GamesInFlight(
            state=games,
            game_id=jnp.zeros((b,), jnp.int32),
            first_player=games.current_player,
            trajectory_moves=jnp.zeros((b,), jnp.int32),
            slots=slots,
        )
        replay = rb.init_replay(self.sizes.replay_size, self.game.observation_shape, jnp.float32,
                                self.game.num_actions,
                                extras=(*self.value.records, *self.targets.records, *self.search.records),
                                finals=self.auxiliary.finals, num_slots=b, obs_layout=self._obs_layout,
                                policy_width=self.game.policy_width)
        return LoopState(
            actors=actors,
            replay=replay,
            params=params,
            opt_state=self.optimizer.init(params),
            key=jax.random.key_data(k_loop),
            step=jnp.int32(0),
            moves=jnp.int32(0),
            starts=pool,
            params_average=params if self.config.swa_decay > 0 else None,
        )

    def _selfplay_move(self, params: Any, context: Any, carry: tuple[GamesInFlight, rb.Replay, jax.Array, Any],
                       key: jax.Array):
        """Advances every game in flight by one move; returns per-move statistics.

        carry: (actors, replay, moves, the game-starts pool); context: the game starts' read-out for this
        step's params (`GameStarts.prepare`).
        """
        actors, replay, moves, pool = carry
        k_search, k_act, k_new = jax.random.split(key, 3)
        state = actors.state

        # Search every position, then pick the move: sampled in the temperature window, else the search's own.
        searched, search_stats = self.search.search(params, k_search, state)
        out = searched.out
        explore = actors.trajectory_moves < self.config.temperature_moves
        action = choose_move(self.spec, k_act, out, explore)
        visits = jnp.take_along_axis(root_visit_counts(out), action[:, None], axis=1)[:, 0]

        # Record the position (with what the value head and the targets need of it), then play the move;
        # the games that end give their positions their targets.
        ptr = (moves * self.sizes.num_envs) % self.sizes.replay_size
        extras = {**self.value.record(state), **self.targets.record(searched, state, action),
                  **self.search.record(searched)}
        replay = self.write_positions(replay, ptr, state, replay_policy(searched), actors.game_id, extras)
        next_state = jax.vmap(self.game.step)(state, action)
        ended = next_state.terminated
        replay = self.targets.game_ended(replay, ptr, ended, actors.game_id, next_state.rewards)
        replay = self.auxiliary.game_ended(replay, ptr, ended, actors.game_id, next_state)

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
            **search_stats,
        }

        # Finished games restart at once, from wherever the game-starts seam says.
        fresh, slots, pool, start_stats = self.starts.restart(k_new, params, context, state, searched, actors.slots,
                                                              pool, ended)
        stats.update(start_stats)
        actors = GamesInFlight(
            state=where_games(ended, fresh, next_state),
            game_id=actors.game_id + ended.astype(jnp.int32),
            first_player=jnp.where(ended, fresh.current_player, actors.first_player),
            trajectory_moves=jnp.where(ended, 0, actors.trajectory_moves + 1),
            slots=slots,
        )
        return (actors, replay, moves + 1, pool), stats

    def write_positions(self, replay: rb.Replay, ptr: jax.Array, state: GameState, policy: rb.PolicyTarget,
                        game_id: jax.Array, extras: dict[str, jax.Array]) -> rb.Replay:
        """Writes the B positions `state` with their policy targets (dense [B, A] or `rb.SparsePolicy`) at replay
        entries [ptr, ptr + B), in the replay's layout (the game's packed observations)."""
        return rb.write(replay, ptr, self.game.pack_observation(state.observation), policy, state.current_player,
                        game_id, extras)

    def sampled(self, replay: rb.Replay, idx: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(observations [batch, *obs_shape] in the game's dtype, policy targets float32 [batch, A]) of replay
        entries `idx` ([batch]): what SGD trains on, whatever the replay's layout."""
        obs = self.game.unpack_observation(rb.stored_obs(replay, idx))
        return obs, rb.policy_rows(replay, idx, self.game.num_actions)

    def sgd_step(self, carry: tuple[Any, Any], key: jax.Array,
                 replay: rb.Replay) -> tuple[tuple[Any, Any], dict[str, jax.Array]]:
        """One optimizer step on a batch of this device's replay, inside `shard_map` (the loop step scans
        `sgd_steps_per_step` of them).

        carry: (params, opt_state), replicated. key: a PRNG key (typed), this device's own. replay: this device's
        replay. Samples sizes.batch_size trainable entries uniformly (`trainable`), applies a random board symmetry
        to each (with `augment`), and takes the gradient of `loss_fn`, averaged over the devices (`pmean`). Returns
        the new (params, opt_state) and the loss terms and head health of `sgd_info_keys`, scalars averaged over
        the devices."""
        params, opt_state = carry
        k_sample, k_aug = jax.random.split(key)
        idx = rb.sample_indices(self.trainable(replay), k_sample, self.sizes.batch_size)
        obs, policy = self.sampled(replay, idx)
        recorded = rb.recorded(replay, idx)
        value = self.targets.value_target(replay.value[idx], recorded)
        auxiliary_targets = self.auxiliary.sample(replay, idx)
        if self.config.augment:
            obs, policy, auxiliary_targets = self.auxiliary.augment(self.game, k_aug, obs, policy, auxiliary_targets)
        grad_fn = jax.grad(functools.partial(loss_fn, with_head_health(self.net.apply), self.value), has_aux=True)
        grads, info = grad_fn(params, obs, policy, value, self.config.value_loss_weight, recorded, self.auxiliary,
                              auxiliary_targets)
        grads = jax.lax.pmean(grads, AXIS)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), jax.lax.pmean(info, AXIS)

    def step_local(self, s: LoopState) -> tuple[LoopState, dict[str, jax.Array]]:
        """One device's loop step, inside `shard_map` (`step` runs it on every device at once): self-play of
        `moves_per_step` moves by every game of this device, their positions written to its replay, then
        `sgd_steps_per_step` SGD steps (`sgd_step`) once the replay is ready on every device, and the weights'
        average. `s` is this device's part of the state (`abstract_state(local=True)`); the metrics returned are
        scalars, summed over the devices (root_value: their mean). A sweep runs it for each of its runs (see
        `init_local`)."""
        cfg = self.config
        key = jax.random.wrap_key_data(s.key)
        key, k_play, k_sgd = jax.random.split(key, 3)

        # 1. Self-play.
        move_keys = jax.random.split(self._device_key(k_play), cfg.moves_per_step)
        context = self.starts.prepare(s.params)
        (actors, replay, moves, starts), stats = jax.lax.scan(
            functools.partial(self._selfplay_move, s.params, context), (s.actors, s.replay, s.moves, s.starts),
            move_keys)
        stats = {k: (v.mean() if k == "root_value" else v.sum()) for k, v in stats.items()}
        # The logged read-outs (SAI's empty board) are of the weights the run gives out.
        logged_context = context if s.params_average is None else self.starts.prepare(s.params_average)
        start_stats, start_metrics = self.starts.step_metrics(logged_context, starts)
        stats.update(start_stats)

        # 2. SGD, once the replay holds enough finished positions (on every device).
        num_targets = jax.lax.pmin(self.trainable(replay).sum(), AXIS)
        ready = (num_targets * self.sizes.num_devices >= cfg.min_replay_size) & (cfg.sgd_steps_per_step > 0)

        # No lax.cond here: on XLA's CPU backend, convolution gradients inside control flow (cond,
        # while) run ~10x slower. Before the replay is ready the steps run and their result is dropped.
        sgd_keys = jax.random.split(self._device_key(k_sgd), max(cfg.sgd_steps_per_step, 1))
        if cfg.sgd_steps_per_step > 0:
            (params, opt_state), info = jax.lax.scan(
                functools.partial(self.sgd_step, replay=replay), (s.params, s.opt_state), sgd_keys,
                unroll=self.sgd_unroll)
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
            **start_metrics,
        }
        average = s.params_average
        if average is not None:
            d = cfg.swa_decay
            average = jax.tree.map(lambda a, p: d * a + (1 - d) * p, average, params)
        new = LoopState(actors=actors, replay=replay, params=params, opt_state=opt_state,
                        key=jax.random.key_data(key), step=s.step + 1, moves=moves, starts=starts,
                        params_average=average)
        return new, metrics
