"""What a run holds per device, known before it compiles (`azjax plan`, and the check `azjax train` and
`azjax sweep` make before compiling).

    p = plan(config)                        # from shapes alone: seconds, nothing compiled or allocated
    check_run_fits(trainer)                 # what `azjax train` and `azjax sweep` do before compiling
    p = plan(config, compile_step=True)     # also XLA's own memory analysis and the step's compile time
    print(render(p))
    check_fits(p, device_memory(jax.devices()[0]))   # MemoryPlanError naming the fields to lower

The estimate adds three parts, each read from the shapes JAX itself gives (`jax.eval_shape`), not from a
formula of the config:
  * the loop state a device holds: the replay (which dominates), the games in flight, parameters, optimizer
    state, averaged weights and the game starts' pool; these are the step's donated arguments;
  * one self-play move's search tree (mctx keeps every node's game state, [B, simulations + 1, ...]);
  * one SGD step's residuals: the activations the backward pass keeps (`jax.vjp`'s closure over a batch).
XLA fuses some of those residuals away and adds buffers of its own; on the CPU the estimate stays within a
quarter of XLA's memory analysis of the compiled step (tests/train/test_plan.py).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

import jax
import jax.numpy as jnp

from azjax.config import Config
from azjax.train.loop import Trainer, local_sizes, loss_fn, with_head_health

GIB = 2.0**30

# Devices users rent or get for free, with the memory one device gives a program (GiB as sold).
COMMON_DEVICES: tuple[tuple[str, float], ...] = (
    ("T4 16 GB (Colab)", 16.0),
    ("V100 16 GB", 16.0),
    ("TPU v4 32 GB", 32.0),
    ("A100 40 GB", 40.0),
    ("A100 80 GB", 80.0),
    ("H100 80 GB", 80.0),
)
FIT_FRACTION = 0.9  # of a device's memory a run may plan to use: XLA and the runtime keep the rest


class MemoryPlanError(ValueError):
    """A run (or sweep) that will not fit in its device's memory."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """Per-device figures of one run (`runs` > 1: a sweep's runs that share a device).

    Bytes are per device. `xla_bytes` and `compile_s` are None unless the step was compiled.
    """

    config: Config
    num_devices: int
    runs: int
    state_bytes: int  # one run's loop state on one device
    replay_bytes: int  # of which the replay
    tree_bytes: int  # one self-play move's search tree
    sgd_bytes: int  # one SGD step's residuals (activations kept for the backward pass)
    positions_per_step: int  # self-play positions written per loop step, over all devices
    xla_bytes: int | None = None  # XLA's memory analysis of the compiled step: arguments + outputs - aliased + temp
    compile_s: float | None = None

    @property
    def bytes_per_device(self) -> int:
        """The estimate from shapes: every run's state, tree and SGD residuals on this device."""
        return self.runs * (self.state_bytes + self.tree_bytes + self.sgd_bytes)

    @property
    def replay_ratio(self) -> float:
        """Positions trained on per position played (`Config.replay_ratio`)."""
        return self.config.replay_ratio

    def fits(self, device_bytes: float) -> bool:
        return self.bytes_per_device <= FIT_FRACTION * device_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "game": self.config.game, "num_devices": self.num_devices, "runs": self.runs,
            "state_bytes": self.state_bytes, "replay_bytes": self.replay_bytes, "tree_bytes": self.tree_bytes,
            "sgd_bytes": self.sgd_bytes, "bytes_per_device": self.bytes_per_device, "xla_bytes": self.xla_bytes,
            "compile_s": self.compile_s, "positions_per_step": self.positions_per_step,
            "replay_ratio": self.replay_ratio,
        }


def nbytes(tree: Any) -> int:
    """Bytes of every array (or ShapeDtypeStruct) leaf of a pytree."""
    return int(sum(math.prod(x.shape) * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree)))


def per_device_config(config: Config, num_devices: int) -> Config:
    """The config one of `num_devices` devices runs: its share of the games, the replay and the batch (the
    shapes a device holds are those of this config on one device)."""
    if num_devices == 1:
        return config
    sizes = local_sizes(config, num_devices)  # the loop's own split, with its checks
    return config.replace(num_envs=sizes.num_envs, batch_size=sizes.batch_size, replay_size=sizes.replay_size,
                          min_replay_size=min(config.min_replay_size, sizes.replay_size),
                          archive_size=max(1, config.archive_size // num_devices),
                          start_queue_size=max(1, config.start_queue_size // num_devices))


def plan(config: Config, *, num_devices: int = 1, runs: int = 1, trainer: Trainer | None = None,
         compile_step: bool = False) -> Plan:
    """The per-device plan of `config` on `num_devices` devices (with `trainer`: that trainer's devices).

    Nothing is allocated: shapes come from `jax.eval_shape`. With `compile_step` the step is lowered and
    compiled on this machine's first device (minutes for a large config on a CPU) for XLA's own figures.
    """
    if trainer is None:
        trainer = Trainer(per_device_config(config, num_devices), devices=jax.devices()[:1])
    else:
        num_devices = trainer.sizes.num_devices
    state = trainer.abstract_state(local=True)

    def one_search(params: Any, key: jax.Array, games: Any) -> Any:
        return trainer.search.search(params, key, games)[0].out.search_tree

    tree = jax.eval_shape(one_search, state.params, jax.random.key(0), state.actors.state)

    batch = trainer.sizes.batch_size
    obs = jax.ShapeDtypeStruct((batch, *trainer.game.observation_shape), jnp.float32)
    policy = jax.ShapeDtypeStruct((batch, trainer.game.num_actions), jnp.float32)
    target = jax.ShapeDtypeStruct((batch,), jnp.float32)
    recorded = {name: jax.ShapeDtypeStruct((batch,), jnp.float32) for name in trainer.value.records}

    def residuals(params: Any, obs: Any, policy: Any, target: Any, recorded: Any) -> Any:
        loss = lambda p: loss_fn(with_head_health(trainer.net.apply), trainer.value, p, obs, policy,  # noqa: E731
                                 target, 1.0, recorded)[0]
        return jax.vjp(loss, params)[1]

    sgd = jax.eval_shape(residuals, state.params, obs, policy, target, recorded)
    result = Plan(config=config, num_devices=num_devices, runs=runs, state_bytes=nbytes(state),
                  replay_bytes=nbytes(state.replay), tree_bytes=nbytes(tree), sgd_bytes=nbytes(sgd),
                  positions_per_step=config.num_envs * config.moves_per_step)
    if compile_step:
        xla_bytes, seconds = compiled_memory(trainer)
        result = dataclasses.replace(result, xla_bytes=xla_bytes, compile_s=seconds)
    return result


def compiled_memory(trainer: Trainer) -> tuple[int, float]:
    """(XLA's memory analysis of the compiled loop step per device, seconds to lower and compile it)."""
    start = time.perf_counter()
    compiled = trainer.lower_step().compile()
    seconds = time.perf_counter() - start
    m = compiled.memory_analysis()
    used = m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes + m.temp_size_in_bytes
    return int(used) // trainer.sizes.num_devices, seconds


def device_memory(device: jax.Device) -> int | None:
    """The device's memory in bytes: the accelerator's limit, or for a CPU its share of the host's physical memory
    (a CPU split into N devices, `AZJAX_CPU_DEVICES`, gives each a 1/N share)."""
    try:
        stats = device.memory_stats()
    except Exception:  # backends without memory statistics raise various errors
        stats = None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"])
    if device.platform == "cpu":
        try:
            host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return None
        return host // max(1, len(jax.local_devices(backend="cpu")))
    return None


def check_run_fits(trainer: Trainer, *, what: str = "the run", runs: int = 1, limit: int | None = None) -> Plan:
    """The plan of `trainer`'s run (`runs` of them per device), refused (MemoryPlanError) when it cannot fit the
    memory of the device it runs on, or `limit` bytes: the check `azjax train` and `azjax sweep` make before
    compiling."""
    p = plan(trainer.config, trainer=trainer, runs=runs)
    check_fits(p, limit if limit is not None else device_memory(trainer.mesh.devices.flat[0]), what=what)
    return p


def fields_to_lower(p: Plan) -> str:
    """The config fields that shrink the largest parts of the plan, largest first, with their values."""
    c = p.config
    parts = [(p.replay_bytes, f"replay_size ({c.replay_size})"),
             (p.tree_bytes, f"num_envs ({c.num_envs}) or num_simulations ({c.num_simulations})"),
             (p.sgd_bytes, f"batch_size ({c.batch_size})"),
             (p.state_bytes - p.replay_bytes, f"num_blocks ({c.num_blocks}) or num_channels ({c.num_channels})")]
    return ", ".join(name for _, name in sorted(parts, key=lambda x: -x[0]))


def check_fits(p: Plan, device_bytes: int | None, *, what: str = "the run") -> None:
    """Raises MemoryPlanError (one line, naming the fields to lower) when `p` needs more than 90% of
    `device_bytes`; None (memory unknown) passes."""
    if device_bytes is None or p.fits(device_bytes):
        return
    runs = f"{p.runs} runs x (" if p.runs > 1 else "("
    raise MemoryPlanError(
        f"{what} needs about {p.bytes_per_device / GIB:.2f} GiB per device {runs}"
        f"{p.replay_bytes / GIB:.2f} GiB replay + {(p.state_bytes - p.replay_bytes) / GIB:.2f} GiB other loop "
        f"state + {p.tree_bytes / GIB:.2f} GiB search tree + {p.sgd_bytes / GIB:.2f} GiB SGD activations), more "
        f"than {FIT_FRACTION:.0%} of the device's {device_bytes / GIB:.2f} GiB: lower {fields_to_lower(p)}")


def render(p: Plan, *, this_machine: tuple[str, int | None] | None = None) -> str:
    """The plan as a few lines for a terminal."""
    c = p.config

    def row(label: str, x: float) -> str:
        return f"  {label:<40}{x / GIB:9.3f} GiB"

    lines = [
        f"{c.game}: {c.num_blocks}x{c.num_channels} network ({c.compute_dtype}), {c.num_envs} games in flight, "
        f"{c.num_simulations} simulations, on {p.num_devices} device(s)" + (f", {p.runs} runs" if p.runs > 1 else ""),
        f"per loop step: {p.positions_per_step} positions played ({c.num_envs} games x {c.moves_per_step} moves), "
        f"{c.sgd_steps_per_step} SGD steps of {c.batch_size}: replay ratio {p.replay_ratio:.2f} positions trained "
        "per position played",
        "memory per device, from shapes:",
        row(f"replay ({c.replay_size // p.num_devices} positions)", p.replay_bytes),
        row("rest of the loop state", p.state_bytes - p.replay_bytes),
        row("one move's search tree", p.tree_bytes),
        row(f"SGD activations (batch {c.batch_size // p.num_devices})", p.sgd_bytes),
        row("total" + (f" ({p.runs} runs)" if p.runs > 1 else ""), p.bytes_per_device),
    ]
    if p.xla_bytes is not None:
        lines.append(f"XLA's memory analysis of the compiled step: {p.xla_bytes / GIB:.3f} GiB per device; "
                     f"lowering and compiling took {p.compile_s:.1f} s")
    lines.append("fits (at most 90% of the device's memory):")
    devices = [(name, size * GIB) for name, size in COMMON_DEVICES]
    if this_machine is not None and this_machine[1]:
        devices.append(this_machine)  # type: ignore[arg-type]
    for name, size in devices:
        lines.append(f"  {name:<28} {'yes' if p.fits(size) else 'no ':>3}  ({size / GIB:.1f} GiB)")
    return "\n".join(lines)
