"""Run directories, full-state checkpoints (orbax) and small exported models.

A run directory:

    RUN_DIR/config.json        the frozen config
    RUN_DIR/params.msgpack     the latest network parameters (what `play`/`eval`/engines load)
    RUN_DIR/checkpoints/N/     orbax checkpoints of the whole loop state at loop step N
    RUN_DIR/trainer.msgpack    the latest checkpoint's state less its replay and games in flight (small enough
                               to commit: a later session resumes from it, its replay refilled by self-play)
    RUN_DIR/metrics.csv        one row per loop step; eval.csv one row per evaluation
    RUN_DIR/tb/                TensorBoard events;  RUN_DIR/curves.png  learning curves

An exported model is just `config.json` + `params.msgpack`, so every command that takes a
checkpoint accepts either a run directory or an exported model directory.

The loop state is saved as a flat dict of its leaves (in tree order). Restoring rebuilds the tree
from a freshly initialised state of the same config, and checks every leaf's shape and dtype, so a
checkpoint from another config fails with a message instead of silently loading.

Crashes (SIGKILL, power loss) never leave a checkpoint that a resume would load half-written: orbax
writes each step into a temporary directory and renames it when complete, and after that azjax writes
a manifest (`azjax_manifest.json`: every file's size and SHA-256, and how many devices wrote it: a resume
needs as many). `StateCheckpointer.latest_step` (what a resume starts from) removes temporary directories
of interrupted writes and skips, with a message, any newest step whose files do not match its manifest (or,
without a manifest, whose orbax metadata cannot be read), moving it to `checkpoints/damaged/` and falling
back to the last complete one.
Small files (config, parameters, JSON results) are written to a temporary file and renamed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from flax import serialization

from azjax.config import Config

CONFIG_FILE = "config.json"
PARAMS_FILE = "params.msgpack"
CHECKPOINTS_DIR = "checkpoints"
METRICS_FILE = "metrics.csv"
TRAINER_FILE = "trainer.msgpack"  # the portable state (`save_portable_state`)
# What the portable state keeps of the loop state: all but the replay and the games in flight, which are most of a
# checkpoint's bytes (chess: about 600 MB) and which a resume can rebuild by playing.
PORTABLE_FIELDS = ("params", "opt_state", "params_average", "starts", "key", "step", "moves")
MANIFEST_FILE = "azjax_manifest.json"  # inside each checkpoints/N/: the sizes and hashes of its files
ORBAX_TMP_MARK = ".orbax-checkpoint-tmp"  # orbax's temporary directories of unfinished writes
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
    except (ValueError, TypeError, OSError) as e:
        raise CheckpointError(f"{file} is not a valid azjax config: {e}") from e


def is_exported_model(path: str | os.PathLike) -> bool:
    """True for a model directory (`export_model`'s config and parameters) that is not a run directory: a run
    has a checkpoints/ directory from its start (and metrics.csv from its first step), an export has neither."""
    p = Path(path)
    return ((p / CONFIG_FILE).is_file() and (p / PARAMS_FILE).is_file()
            and not (p / CHECKPOINTS_DIR).exists() and not (p / METRICS_FILE).exists())


def enclosing_model(path: str | os.PathLike) -> Path | None:
    """The exported model directory that `path` is or lies inside (None if there is none)."""
    p = Path(path).absolute()
    for d in (p, *p.parents):
        if is_exported_model(d):
            return d
    return None


def refuse_model_dir(path: str | os.PathLike, what: str) -> None:
    """Exported models are read-only to every command but `export` itself: refuses to write `what` (e.g.
    "--out FILE") into one, so a mistyped path never overwrites a saved model."""
    model = enclosing_model(path)
    if model is not None:
        raise CheckpointError(f"{what} lies in the exported model {model}: models are read-only; "
                              "write somewhere else")


def check_resumable(path: str | os.PathLike) -> None:
    """Refuses a `--resume` of anything but a run directory (before anything in it is touched)."""
    load_config(path)
    if is_exported_model(path):
        raise CheckpointError(
            f"{path} is an exported model, not a run directory (it has no {CHECKPOINTS_DIR}/ or {METRICS_FILE}): "
            "--resume continues a run; to train a new network pick a new --run_dir")


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
    if dest.absolute() == Path(src).absolute():
        raise CheckpointError(f"cannot export {src} onto itself: give another destination")
    if (dest / CHECKPOINTS_DIR).exists() or (dest / METRICS_FILE).exists():
        # Its params.msgpack is the run's, which a resume and every checkpoint rewrite: not a model to replace.
        raise CheckpointError(f"{dest} holds a training run: export into a model directory of its own")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(src) / CONFIG_FILE, dest / CONFIG_FILE)
    if params is None:
        shutil.copyfile(Path(src) / PARAMS_FILE, dest / PARAMS_FILE)
    else:
        save_params(dest, params)
    return dest


def save_portable_state(run_dir: str | os.PathLike, state: Any) -> None:
    """Writes RUN_DIR/trainer.msgpack: the loop state's `PORTABLE_FIELDS` (weights, optimizer, averaged weights,
    the game-starts pool, key and counters), gathered to the host. A session that commits it (with config.json and
    metrics.csv) lets a later one resume on another machine, where the orbax checkpoints are not."""
    fields = {k: getattr(state, k) for k in PORTABLE_FIELDS if getattr(state, k) is not None}
    data = serialization.to_bytes(serialization.to_state_dict(jax.device_get(fields)))
    _atomic_write(Path(run_dir) / TRAINER_FILE, data)


def load_portable_state(run_dir: str | os.PathLike, template: Any) -> Any:
    """`template` (a fresh loop state: its replay and games in flight are kept) with the `PORTABLE_FIELDS` of
    RUN_DIR/trainer.msgpack, each array checked against the template's shape and dtype and placed with its
    sharding. Raises CheckpointError naming the problem."""
    file = Path(run_dir) / TRAINER_FILE
    try:
        raw = serialization.msgpack_restore(file.read_bytes())
    except Exception as e:  # msgpack raises several types on corrupt data
        raise CheckpointError(f"{file} is corrupt or not a portable loop state: {_one_line(e)}") from e
    fields = {k: getattr(template, k) for k in PORTABLE_FIELDS if getattr(template, k) is not None}
    want = serialization.to_state_dict(jax.device_get(fields))
    problems = _compare_trees(want, raw)
    if not problems:
        bad_dtype = [f"{path}: dtype {g.dtype}, expected {w.dtype}" for path, w, g in _paired_leaves(want, raw)
                     if np.asarray(w).dtype != np.asarray(g).dtype]
        problems = bad_dtype
    if problems:
        raise CheckpointError(f"{file} does not match the run's config: " + "; ".join(problems[:5])
                              + " (written by another config, device count or azjax version)")
    restored = serialization.from_state_dict(fields, raw)
    placed = jax.tree.map(lambda t, x: jax.device_put(np.asarray(x), t.sharding), fields, restored)
    return template.replace(**placed)


def _paired_leaves(want: Any, got: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, wanted leaf, got leaf) of two state dicts of one structure (`_compare_trees` found none missing)."""
    if isinstance(want, dict):
        return [leaf for k in want for leaf in _paired_leaves(want[k], got[k], f"{path}/{k}")]
    return [(path, want, got)]


class StateCheckpointer:
    """Orbax checkpoints of the whole loop state under RUN_DIR/checkpoints."""

    def __init__(self, run_dir: str | os.PathLike, max_to_keep: int = 3):
        self.directory = Path(run_dir).absolute() / CHECKPOINTS_DIR
        # The handler is named up front so a fresh manager can read the metadata of checkpoints it did
        # not write (without it, orbax reports none, and every older checkpoint would look damaged).
        self.manager = ocp.CheckpointManager(
            self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True),
            item_handlers=ocp.StandardCheckpointHandler())

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step (None if there is none). Leftovers of interrupted writes
        are removed, and damaged newer steps are moved to `checkpoints/damaged/`, each with a message."""
        changed = False
        if self.directory.exists():
            for tmp in sorted(p for p in self.directory.iterdir() if ORBAX_TMP_MARK in p.name):
                print(f"removing {tmp}: an unfinished checkpoint write (the process was stopped during it)", flush=True)
                shutil.rmtree(tmp, ignore_errors=True)
                changed = True
        if changed:
            self._reload()
        for step in sorted(self.manager.all_steps(), reverse=True):
            problem = self.check(step)
            if problem is None:
                return step
            dest = self.directory / "damaged" / f"{step}-{time.strftime('%Y%m%d_%H%M%S')}"
            print(f"skipping checkpoint {self.directory / str(step)}: {problem}; moved it to {dest} and "
                  "falling back to the previous checkpoint", flush=True)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.directory / str(step), dest)
            self._reload()
        return None

    def check(self, step: int) -> str | None:
        """None if checkpoint `step` is complete and intact, else what is wrong with it."""
        step_dir = self.directory / str(step)
        manifest_file = step_dir / MANIFEST_FILE
        if not manifest_file.exists():
            # Written by an older azjax, or the process stopped between orbax's final rename and the
            # manifest: orbax's rename makes it complete, as long as its metadata can be read.
            try:
                meta = self.manager.item_metadata(step)
                if meta is None or "leaves" not in dict(meta):
                    return "its orbax metadata is missing"
            except Exception as e:
                return f"its orbax metadata cannot be read ({_one_line(e)})"
            return None
        try:
            manifest = json.loads(manifest_file.read_text())
            files = dict(manifest["files"])
        except (ValueError, KeyError, TypeError) as e:
            return f"its manifest {MANIFEST_FILE} is corrupt ({_one_line(e)})"
        for rel, (size, digest) in sorted(files.items()):
            f = step_dir / rel
            if not f.is_file():
                return f"{rel} is missing"
            if f.stat().st_size != size:
                return f"{rel} has {f.stat().st_size} bytes, the manifest says {size} (truncated or overwritten)"
            if _sha256(f) != digest:
                return f"{rel} does not match its checksum (corrupt)"
        return None

    def save(self, step: int, state: Any) -> None:
        step_dir = self.directory / str(step)
        if step_dir.exists():
            # A step left by a run that was stopped after this checkpoint and resumed from an earlier one
            # (its later rows are forgotten too): orbax would refuse to overwrite it.
            self.manager.delete(step)
        leaves = jax.tree.leaves(state)
        self.manager.save(step, args=ocp.args.StandardSave({"leaves": _leaf_dict(leaves)}), force=True)
        self.manager.wait_until_finished()
        if jax.process_index() == 0:
            files = {str(f.relative_to(step_dir)): [f.stat().st_size, _sha256(f)]
                     for f in sorted(step_dir.rglob("*")) if f.is_file() and f.name != MANIFEST_FILE}
            manifest = {"step": step, "devices": jax.device_count(), "files": files}
            _atomic_write(step_dir / MANIFEST_FILE, json.dumps(manifest, indent=1).encode())

    def _reload(self) -> None:
        self.manager.reload()

    def saved_devices(self, step: int) -> int | None:
        """How many devices wrote checkpoint `step` (None: not recorded, as by an older azjax)."""
        try:
            devices = json.loads((self.directory / str(step) / MANIFEST_FILE).read_text()).get("devices")
        except (OSError, ValueError, AttributeError):
            return None
        return devices if isinstance(devices, int) else None

    def restore(self, step: int, template: Any) -> Any:
        """The state saved at `step`, in the structure (and shardings) of `template`."""
        # Games and the replay are split per device (azjax.train.loop.local_sizes): the arrays of a state saved
        # by N devices have the shapes M devices need, but not their layout.
        devices = self.saved_devices(step)
        if devices is not None and devices != jax.device_count():
            raise CheckpointError(
                f"checkpoint {self.directory / str(step)} was written by {devices} device(s), this process has "
                f"{jax.device_count()}: resume on {devices} (on a CPU: AZJAX_CPU_DEVICES={devices})")
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
            raise CheckpointError(f"checkpoint {self.directory / str(step)} could not be read: {_one_line(e)}") from e
        return jax.tree.unflatten(treedef, [restored["leaves"][k] for k in sorted(restored["leaves"])])


def _sha256(file: Path) -> str:
    h = hashlib.sha256()
    with open(file, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _one_line(e: BaseException | str, limit: int = 300) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def script_command(script_file: str | os.PathLike, argv: list[str] | None = None) -> str:
    """The command that reruns a script from the repository root, as results files record it:
    `python -m scripts.NAME ARGS` or `python -m lab.STUDY.NAME ARGS` (argv defaults to this process's arguments),
    after `AZJAX_CPU_DEVICES=N` when that is set: the CPU split changes a run's speed, so a timed result without it
    would not rerun as timed. The module is named by the packages (folders with an `__init__.py`) above the file."""
    args = sys.argv[1:] if argv is None else list(argv)
    split = os.environ.get("AZJAX_CPU_DEVICES", "").strip()
    env = [f"AZJAX_CPU_DEVICES={split}"] if split else []
    return shlex.join([*env, "python", "-m", script_module(script_file), *args])


def script_module(script_file: str | os.PathLike) -> str:
    """The dotted module name of a script file, as `python -m` takes it: the file's stem after the names of the
    package folders above it (`lab/sai_7x7/sai_7x7.py` -> `lab.sai_7x7.sai_7x7`)."""
    path = Path(script_file).resolve()
    names = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        names.insert(0, folder.name)
        folder = folder.parent
    return ".".join(names)


def earlier_commands(previous: dict[str, Any], command: str) -> list[str]:
    """The commands that made a results file before `command` goes on from it (a resumed run, a sweep's next runs):
    the file's own `earlier_commands`, `training_command` (where a report was written apart from the training) and
    `command`, once each, in order, without `command` itself."""
    earlier = [*previous.get("earlier_commands", []),
               *(previous[k] for k in ("training_command", "command") if previous.get(k))]
    return [c for i, c in enumerate(earlier) if c not in earlier[:i] and c != command]


def write_json(file: str | os.PathLike, obj: Any) -> None:
    _atomic_write(Path(file), (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def read_json(file: str | os.PathLike, what_next: str = "") -> dict[str, Any]:
    """The JSON object in `file`; a `CheckpointError` naming the file (and `what_next`, e.g. "; not
    overwriting it") if it is not valid JSON or not an object."""
    file = Path(file)
    try:
        data = json.loads(file.read_text())
    except ValueError as e:
        raise CheckpointError(f"{file} is not valid JSON ({e}){what_next}") from e
    if not isinstance(data, dict):
        raise CheckpointError(f"{file} does not hold a JSON object{what_next}")
    return data


def update_json(file: str | os.PathLike, updates: dict[str, Any]) -> dict[str, Any]:
    """Merges `updates` into the JSON object in `file` by top-level key (other keys are kept: several
    scripts write sections of one results file) and writes it atomically; returns the merged object."""
    file = Path(file)
    data = read_json(file, "; not overwriting it") if file.exists() else {}
    data.update(updates)
    write_json(file, data)
    return data
