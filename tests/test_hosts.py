"""Many hosts: two processes joined by `jax.distributed.initialize` (CPU, a coordinator on localhost)
run the loop exactly like one process with two devices; their checkpoint resumes in one process, and
that one's in two processes again."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

from azjax.hosts import GPU_COMMAND_BUFFER_TYPES, gpu_while_loop_graphs, host_cores, split_host_cpu
from azjax.train import METRIC_COLUMNS, load_metrics

ROOT = Path(__file__).resolve().parents[1]

# What every process of a many-host run does (azjax.cli does the same for `azjax train`).
WORKER = textwrap.dedent("""
    import json, sys
    from azjax.hosts import init_distributed
    init_distributed()  # first: importing azjax.config (pgx) starts JAX's backend
    import jax
    from azjax.config import preset
    from azjax.train import train
    run_dir, mode, stop_after, overrides = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    stop_after = None if stop_after == "end" else int(stop_after)
    if mode == "resume":
        summary = train(None, run_dir, resume=True, progress=False, stop_after=stop_after)
    else:
        summary = train(preset("connect_four", **overrides), run_dir, progress=False, stop_after=stop_after)
    print(f"process {jax.process_index()} of {jax.process_count()}, {jax.device_count()} devices: "
          f"step {summary['step']}")
""")


def _free_local_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices: int, **extra: str) -> dict[str, str]:
    """A CPU process with `devices` devices, this checkout's azjax and the session's compilation cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZJAX_", "JAX_", "XLA_FLAGS"))}
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if f.startswith(("--xla_backend_optimization_level",
                                                                                  "--xla_cpu_use_fusion_emitters"))]
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               JAX_PLATFORMS="cpu", XLA_FLAGS=" ".join([*flags, f"--xla_force_host_platform_device_count={devices}"]),
               **extra)
    if jax.config.jax_compilation_cache_dir:
        env.update(JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir,
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.5")
    return env


def _start(run_dir: Path, mode: str, stop_after: str, overrides: dict, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WORKER, str(run_dir), mode, stop_after, json.dumps(overrides)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _two_processes(run_dir: Path, mode: str, stop_after: str, overrides: dict, port: int) -> list[subprocess.Popen]:
    return [_start(run_dir, mode, stop_after, overrides,
                   _env(1, AZJAX_DISTRIBUTED="1", JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", AZJAX_NUM_PROCESSES="2",
                        AZJAX_PROCESS_ID=str(i)))
            for i in range(2)]


def _finish(procs: list[subprocess.Popen], timeout: float = 600) -> list[str]:
    """The outputs of `procs`; all of them are killed if one fails (the others would wait for it)."""
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            outs.append(out)
            assert p.returncode == 0, out[-4000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return outs


@pytest.mark.slow
def test_two_processes_train_like_one_process_with_two_devices(tmp_path, tiny_overrides):
    try:
        port = _free_local_port()
    except OSError as e:
        pytest.skip(f"this platform cannot open a local port for the coordinator: {e}")
    # 8 moves a step so that games end and SGD (an all-reduce across the processes) runs from step 2.
    overrides = {**tiny_overrides, "moves_per_step": 8, "replay_size": 128, "num_steps": 4, "checkpoint_every": 2}
    two, one = tmp_path / "two_processes", tmp_path / "one_process"
    reference = _start(one, "new", "end", overrides, _env(2))
    outs = _finish([*_two_processes(two, "new", "2", overrides, port), reference])
    assert "process 0 of 2, 2 devices: step 2" in outs[0]
    assert "process 1 of 2, 2 devices: step 2" in outs[1]
    assert "process 0 of 1, 2 devices: step 4" in outs[2]

    # Process 0 wrote the run's files once (process 1's metrics rows would double them); both wrote
    # their shards of the checkpoint.
    for name in ("config.json", "params.msgpack", "metrics.csv", "curves.png", "checkpoints/2"):
        assert (two / name).exists(), name
    rows, _ = load_metrics(two)
    assert [r["step"] for r in rows] == [1, 2]

    # The checkpoint of the two processes resumes in one process with two devices (step 3), and the
    # checkpoint of that one in two processes again (step 4).
    (out,) = _finish([_start(two, "resume", "1", overrides, _env(2))])
    assert "process 0 of 1, 2 devices: step 3" in out
    outs = _finish(_two_processes(two, "resume", "end", overrides, _free_local_port()))
    assert "process 0 of 2, 2 devices: step 4" in outs[0] and "process 1 of 2, 2 devices: step 4" in outs[1]

    resumed, _ = load_metrics(two)
    reference_rows, _ = load_metrics(one)
    assert len(resumed) == len(reference_rows) == 4
    assert sum(r["sgd_applied"] for r in reference_rows) >= 2, "SGD ran, so gradients were averaged across hosts"
    for a, b in zip(resumed, reference_rows, strict=True):
        for k in METRIC_COLUMNS:
            x, y = a[k], b[k]
            assert x == y or (np.isnan(x) and np.isnan(y)), (a["step"], k, x, y)


def test_cpu_devices_adds_xla_s_host_device_count():
    environ = {"AZJAX_CPU_DEVICES": "3", "XLA_FLAGS": "--xla_backend_optimization_level=0"}
    assert split_host_cpu(environ) == 3
    assert environ["XLA_FLAGS"] == "--xla_backend_optimization_level=0 --xla_force_host_platform_device_count=3"


def test_cpu_devices_auto_is_one_device_per_core():
    environ = {"AZJAX_CPU_DEVICES": "auto"}
    assert split_host_cpu(environ) == host_cores()
    assert environ["XLA_FLAGS"] == f"--xla_force_host_platform_device_count={host_cores()}"


def test_cpu_devices_unset_or_already_in_xla_flags_changes_nothing():
    unset = {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
    assert split_host_cpu(unset) is None and unset == {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
    given = {"AZJAX_CPU_DEVICES": "2", "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    split_host_cpu(given)
    assert given["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"


def test_a_cuda_gpu_gets_while_loops_in_cuda_graphs_after_the_users_flags():
    environ = {"XLA_FLAGS": "--xla_gpu_autotune_level=0"}
    assert gpu_while_loop_graphs(environ, cuda=True)
    graphs = f"--xla_gpu_enable_command_buffer={GPU_COMMAND_BUFFER_TYPES}"
    assert environ["XLA_FLAGS"] == f"--xla_gpu_autotune_level=0 {graphs}"
    assert "WHILE" in GPU_COMMAND_BUFFER_TYPES.split(",") and "CONDITIONAL" in GPU_COMMAND_BUFFER_TYPES.split(",")


@pytest.mark.parametrize("environ, cuda", [
    ({}, False),  # no CUDA plugin: a CPU or TPU install
    ({"AZJAX_GPU_GRAPHS": "0"}, True),  # turned off
    ({"JAX_PLATFORMS": "cpu"}, True),  # the GPU ruled out
    ({"XLA_FLAGS": "--xla_gpu_enable_command_buffer="}, True),  # the user's own command buffers
])
def test_while_loop_graphs_leave_xla_flags_alone_without_a_cuda_gpu_or_when_told(environ, cuda):
    before = dict(environ)
    assert not gpu_while_loop_graphs(environ, cuda=cuda)
    assert environ == before


def test_this_cpu_machine_finds_no_cuda_plugin_and_xla_on_the_cpu_accepts_the_flag():
    assert not gpu_while_loop_graphs({}) or jax.default_backend() == "gpu"
    flags = f"--xla_gpu_enable_command_buffer={GPU_COMMAND_BUFFER_TYPES}"
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    run = subprocess.run([sys.executable, "-c", "import jax.numpy as j; print(int(j.ones(3).sum()))"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "3", run.stderr


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_cpu_devices_rejects_what_is_not_a_count(value):
    with pytest.raises(ValueError, match="AZJAX_CPU_DEVICES"):
        split_host_cpu({"AZJAX_CPU_DEVICES": value})


def test_the_command_line_trains_on_the_cpu_split_into_devices():
    env = {k: v for k, v in _env(1).items() if k != "XLA_FLAGS"}
    # What `azjax.cli.main` does first when a command runs.
    probe = "from azjax.cli.main import start_devices; start_devices(); import jax; print(jax.device_count())"
    out = subprocess.run([sys.executable, "-c", probe], env={**env, "AZJAX_CPU_DEVICES": "2"}, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "2"
    bad = subprocess.run([sys.executable, "-m", "azjax.cli", "train", "--game", "connect_four"],
                         env={**env, "AZJAX_CPU_DEVICES": "many"}, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "AZJAX_CPU_DEVICES='many'" in bad.stderr


def test_importing_the_command_line_changes_nothing():
    """Scripts import azjax.cli (and the compilation cache): no CPU split, no many-host start, no JAX backend."""
    env = {k: v for k, v in _env(1).items() if k != "XLA_FLAGS"}
    probe = ("import os, sys, azjax.cli, azjax.cli.main, azjax.compile_cache\n"
             "print(os.environ.get('XLA_FLAGS', ''), 'pgx' in sys.modules, 'azjax.config' in sys.modules)\n"
             "import jax; print(jax.device_count(), jax.distributed.is_initialized())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                         env={**env, "AZJAX_CPU_DEVICES": "2", "AZJAX_DISTRIBUTED": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-2:] == [" False False", "1 False"], out.stdout
