"""Run directories, full-state checkpoints (orbax) and small exported models.

A run directory:

    RUN_DIR/config.json        the frozen config
    RUN_DIR/params.msgpack     the latest network parameters (what `play`/`eval`/engines load)
    RUN_DIR/checkpoints/N/     orbax checkpoints of the whole loop state at loop step N
    RUN_DIR/metrics.csv        one row per loop step; eval.csv one row per evaluation
    RUN_DIR/tb/                TensorBoard events;  RUN_DIR/curves.png  learning curves

An exported model is just `config.json` + `params.msgpack`, so every command that takes a
checkpoint accepts either a run directory or an exported model directory.

The loop state is saved as a flat dict of its leaves (in tree order). Restoring rebuilds the tree
from a freshly initialised state of the same config, and checks every leaf's shape and dtype, so a
checkpoint from another config fails with a message instead of silently loading.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from flax import serialization

from azjax.config import Config

CONFIG_FILE = "config.json"
PARAMS_FILE = "params.msgpack"
# Fields that change only logging, never what the loop computes: they may differ on resume.
RESUME_MUTABLE_FIELDS = ("log_every", "checkpoint_every")


class CheckpointError(ValueError):
    """A checkpoint or model directory that cannot be used, with the reason."""


def save_config(run_dir: Path, config: Config) -> None:
    _atomic_write(Path(run_dir) / CONFIG_FILE, config.to_json().encode())


def load_config(path: str | os.PathLike) -> Config:
    file = Path(path) / CONFIG_FILE
    if not file.exists():
        raise CheckpointError(f"{path} is neither a run directory nor an exported model: no {CONFIG_FILE}")
    try:
        return Config.from_json(file.read_text())
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{file} is not a valid azjax config: {e}") from e


def config_mismatch(saved: Config, given: Config) -> list[str]:
    """Fields whose values differ (ignoring those that only change logging)."""
    a, b = saved.to_dict(), given.to_dict()
    return [f"{k}: saved {a[k]!r}, given {b[k]!r}" for k in a if a[k] != b[k] and k not in RESUME_MUTABLE_FIELDS]


def save_params(path: str | os.PathLike, params: Any) -> None:
    data = serialization.to_bytes(jax.device_get(params))
    _atomic_write(Path(path) / PARAMS_FILE, data)


def load_params(path: str | os.PathLike, template: Any) -> Any:
    """Parameters stored under `path`, checked against `template` (e.g. freshly initialised params)."""
    file = Path(path) / PARAMS_FILE
    if not file.exists():
        raise CheckpointError(f"no {PARAMS_FILE} in {path}: the run has not written a checkpoint yet")
    try:
        raw = serialization.msgpack_restore(file.read_bytes())
    except Exception as e:  # msgpack raises several types on corrupt data
        raise CheckpointError(f"{file} is corrupt or not a parameter file: {e}") from e
    want = serialization.to_state_dict(template)
    problems = _compare_trees(want, raw)
    if problems:
        raise CheckpointError(f"{file} does not match its config's network: " + "; ".join(problems[:5]))
    return serialization.from_state_dict(template, raw)


def export_model(src: str | os.PathLike, dest: str | os.PathLike, params: Any = None) -> Path:
    """Copies config and parameters (not the replay or optimizer) into `dest`.

    `params` (e.g. restored from an earlier checkpoint of the run) are written instead of the run's latest.
    """
    load_config(src)
    if params is None and not (Path(src) / PARAMS_FILE).exists():
        raise CheckpointError(f"no {PARAMS_FILE} in {src}")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(src) / CONFIG_FILE, dest / CONFIG_FILE)
    if params is None:
        shutil.copyfile(Path(src) / PARAMS_FILE, dest / PARAMS_FILE)
    else:
        save_params(dest, params)
    return dest


class StateCheckpointer:
    """Orbax checkpoints of the whole loop state under RUN_DIR/checkpoints."""

    def __init__(self, run_dir: str | os.PathLike, max_to_keep: int = 3):
        self.directory = Path(run_dir).absolute() / "checkpoints"
        self.manager = ocp.CheckpointManager(
            self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True))

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def save(self, step: int, state: Any) -> None:
        leaves = jax.tree.leaves(state)
        self.manager.save(step, args=ocp.args.StandardSave({"leaves": _leaf_dict(leaves)}))
        self.manager.wait_until_finished()

    def restore(self, step: int, template: Any) -> Any:
        """The state saved at `step`, in the structure (and shardings) of `template`."""
        leaves, treedef = jax.tree.flatten(template)
        abstract = {"leaves": _leaf_dict([
            jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None)) for x in leaves])}
        try:
            meta = self.manager.item_metadata(step)
            saved = dict(meta["leaves"]) if meta is not None else None
        except Exception:
            saved = None
        if saved is not None:
            want = abstract["leaves"]
            if set(saved) != set(want):
                raise CheckpointError(
                    f"checkpoint {self.directory / str(step)} holds {len(saved)} arrays, the config needs "
                    f"{len(want)}: it was written by a different config or azjax version")
            bad = [f"array {k}: saved {tuple(saved[k].shape)}, needed {tuple(want[k].shape)}"
                   for k in sorted(want) if tuple(saved[k].shape) != tuple(want[k].shape)]
            if bad:
                raise CheckpointError(f"checkpoint {self.directory / str(step)} does not match the config: "
                                      + "; ".join(bad[:5]))
        try:
            restored = self.manager.restore(step, args=ocp.args.StandardRestore(abstract))
        except Exception as e:
            raise CheckpointError(f"checkpoint {self.directory / str(step)} could not be read: {e}") from e
        return jax.tree.unflatten(treedef, [restored["leaves"][k] for k in sorted(restored["leaves"])])


def _leaf_dict(leaves: list[Any]) -> dict[str, Any]:
    return {f"{i:05d}": x for i, x in enumerate(leaves)}


def _compare_trees(want: Any, got: Any, path: str = "") -> list[str]:
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{path or '/'} should be a mapping"]
        problems = [f"{path}/{k} missing" for k in want if k not in got]
        problems += [f"{path}/{k} unexpected" for k in got if k not in want]
        for k in want:
            if k in got:
                problems += _compare_trees(want[k], got[k], f"{path}/{k}")
        return problems
    w, g = np.asarray(want), np.asarray(got)
    if w.shape != g.shape:
        return [f"{path}: shape {g.shape}, expected {w.shape}"]
    return []


def _atomic_write(file: Path, data: bytes) -> None:
    """Writes via a temporary file so a crash never leaves a half-written file behind."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(file.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, file)


def write_json(file: str | os.PathLike, obj: Any) -> None:
    _atomic_write(Path(file), (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())
