"""Many hosts: one process per host, every process runs the same command.

    AZJAX_DISTRIBUTED=1 azjax train ...     # on every host (TPU slice, SLURM job, or by hand)

`init_distributed()` calls `jax.distributed.initialize()`; after it `jax.devices()` lists the
accelerators of every host, and the loop's mesh (`azjax.train.loop.Trainer`) spans them all. It must run
before anything starts JAX's backend, and importing pgx does (azjax.games), so the command line's `main` calls it
(`azjax.cli.main.start_devices`) before it imports any command's machinery, and a script calls it first thing.
This module imports nothing of azjax.

On one host with no accelerator, `AZJAX_CPU_DEVICES=N` (or `auto`, one per core) splits the CPU into N JAX
devices (`split_host_cpu`), so the data-parallel loop keeps N cores busy: XLA runs one device's small
convolutions on about one core.

On a CUDA GPU, `gpu_while_loop_graphs` lets XLA capture while loops and conditionals in CUDA graphs: the search's
tree phase is one small launch per step of a while loop, and graphs took Connect Four's `full` self-play from 0.51
to 0.58 of the network-only rate on an H200 (docs/gpu.md). `AZJAX_GPU_GRAPHS=0` turns it off.

Only process 0 writes the run's files (config, parameters, metrics, plots); every process writes
its own shards of the orbax checkpoints, so the run directory must be one all hosts share.
"""

from __future__ import annotations

import os
from typing import Any

OFF_WORDS = ("", "0", "off", "none", "false")  # values of AZJAX_DISTRIBUTED that mean "no"
CPU_DEVICES_FLAG = "--xla_force_host_platform_device_count"
GPU_COMMAND_BUFFER_FLAG = "--xla_gpu_enable_command_buffer"
# XLA's default command buffer types, plus CONDITIONAL and WHILE: the search's control flow
GPU_COMMAND_BUFFER_TYPES = "FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE"
# What `pip install jax[cuda12]` (or 13) brings: the plugin (jax-cudaNN-plugin) and its PJRT (jax-cudaNN-pjrt)
CUDA_PLUGINS = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")


def host_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def split_host_cpu(environ: dict[str, str] | None = None) -> int | None:
    """Splits the CPU into `AZJAX_CPU_DEVICES` JAX devices; returns that number (None: the variable is unset).

    `AZJAX_CPU_DEVICES` is a positive count or `auto` (`host_cores()`). It adds XLA's
    `--xla_force_host_platform_device_count` to `XLA_FLAGS`, so it must run before anything starts JAX's
    backend; a count already in `XLA_FLAGS` is left alone. Accelerators are unaffected (the flag only
    splits the CPU platform). Raises ValueError on a value that is not a positive count or `auto`.
    """
    environ = os.environ if environ is None else environ
    value = environ.get("AZJAX_CPU_DEVICES", "").strip().lower()
    if not value:
        return None
    if value == "auto":
        count = host_cores()
    elif value.isdigit() and int(value) > 0:
        count = int(value)
    else:
        raise ValueError(f"AZJAX_CPU_DEVICES={value!r}: expected a positive number of devices or 'auto'")
    flags = environ.get("XLA_FLAGS", "")
    if CPU_DEVICES_FLAG not in flags:
        environ["XLA_FLAGS"] = f"{flags} {CPU_DEVICES_FLAG}={count}".strip()
    return count


def gpu_while_loop_graphs(environ: dict[str, str] | None = None, cuda: bool | None = None) -> bool:
    """Adds `--xla_gpu_enable_command_buffer` with while loops and conditionals to `XLA_FLAGS`; returns whether it did.

    Only where JAX has a CUDA plugin (`cuda`: None looks for one) and `JAX_PLATFORMS` does not rule the GPU out;
    never when `XLA_FLAGS` already sets command buffers or `AZJAX_GPU_GRAPHS` is off (0, off, false, none). Like
    `split_host_cpu`, it must run before anything starts JAX's backend.
    """
    environ = os.environ if environ is None else environ
    if environ.get("AZJAX_GPU_GRAPHS", "1").strip().lower() in OFF_WORDS:
        return False
    platforms = environ.get("JAX_PLATFORMS", "").strip().lower()
    if platforms and not any(p in platforms for p in ("cuda", "gpu")):
        return False
    if cuda is None:
        from importlib.util import find_spec

        def found(name: str) -> bool:
            try:
                return find_spec(name) is not None
            except ModuleNotFoundError:  # jax_plugins.x without any jax_plugins
                return False

        cuda = any(found(name) for name in CUDA_PLUGINS)
    flags = environ.get("XLA_FLAGS", "")
    if not cuda or GPU_COMMAND_BUFFER_FLAG in flags:
        return False
    environ["XLA_FLAGS"] = f"{flags} {GPU_COMMAND_BUFFER_FLAG}={GPU_COMMAND_BUFFER_TYPES}".strip()
    return True


def init_distributed() -> bool:
    """`jax.distributed.initialize()` when `AZJAX_DISTRIBUTED=1`; returns whether it ran.

    On TPU VMs, SLURM and Open MPI, JAX finds the coordinator and the process ids itself. Elsewhere
    set `JAX_COORDINATOR_ADDRESS=host:port` (read by JAX), `AZJAX_NUM_PROCESSES` and
    `AZJAX_PROCESS_ID`; `JAX_LOCAL_DEVICE_IDS=0,1,...` (read by JAX) names the accelerators a
    process drives (SLURM's detection gives each process one GPU otherwise).
    """
    if os.environ.get("AZJAX_DISTRIBUTED", "").strip().lower() in OFF_WORDS:
        return False
    import jax

    if jax.distributed.is_initialized():  # e.g. a script that initialised and then ran azjax.cli.main
        return True
    kwargs: dict[str, Any] = {}
    for name, env in (("num_processes", "AZJAX_NUM_PROCESSES"), ("process_id", "AZJAX_PROCESS_ID")):
        if os.environ.get(env):
            kwargs[name] = int(os.environ[env])
    jax.distributed.initialize(**kwargs)
    return True


def is_primary() -> bool:
    """Process 0: the one that writes the run's files (the others hold the same replicated values)."""
    import jax

    return jax.process_index() == 0


def barrier(name: str) -> None:
    """Waits until every process gets here (a no-op with one process)."""
    import jax

    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
