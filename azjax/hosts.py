"""Many hosts: one process per host, every process runs the same command.

    AZJAX_DISTRIBUTED=1 azjax train ...     # on every host (TPU slice, SLURM job, or by hand)

`init_distributed()` calls `jax.distributed.initialize()`; after it `jax.devices()` lists the
accelerators of every host, and the loop's mesh (`azjax.train.loop.Trainer`) spans them all. It must run
before anything starts JAX's backend, and importing pgx does (azjax.games), so `azjax.cli` calls it
before its other imports and a script calls it first thing. This module imports nothing of azjax.

Only process 0 writes the run's files (config, parameters, metrics, plots); every process writes
its own shards of the orbax checkpoints, so the run directory must be one all hosts share.
"""

from __future__ import annotations

import os
from typing import Any

OFF_WORDS = ("", "0", "off", "none", "false")  # values of AZJAX_DISTRIBUTED that mean "no"


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

    if jax.distributed.is_initialized():  # e.g. a script that initialised and then imported azjax.cli
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
