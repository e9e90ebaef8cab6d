"""The Colab notebook runs top to bottom: executed for real (nbclient + an ipykernel) with the tiny
training switch, in a temporary directory, and its outputs checked cell by cell."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import jax
import pytest

nbformat = pytest.importorskip("nbformat", reason="needs the dev extra (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="needs the dev extra (pip install -e '.[dev]')")
pytest.importorskip("ipykernel", reason="needs the dev extra (pip install -e '.[dev]')")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "azjax_colab.ipynb"


def _cell(nb, cell_id: str):
    cells = [c for c in nb.cells if c.get("id") == cell_id]
    assert len(cells) == 1, f"no unique cell {cell_id!r} in {NOTEBOOK.name}"
    return cells[0]


def _stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def _data(cell, mime: str) -> list[str]:
    return [o.data[mime] for o in cell.outputs if o.output_type in ("display_data", "execute_result")
            and mime in o.data]


def test_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    dirty = [c.get("id") for c in nb.cells if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"clear the outputs of cells {dirty} before committing the notebook"


@pytest.mark.slow
def test_notebook_runs_top_to_bottom(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel inherits this environment: tiny training, no pip install, azjax from this checkout,
    # and the test session's persistent compilation cache where it has one.
    monkeypatch.setenv("AZJAX_NOTEBOOK_TINY", "1")
    monkeypatch.setenv("AZJAX_NOTEBOOK_SKIP_INSTALL", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    cache = jax.config.jax_compilation_cache_dir
    if cache:
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", cache)
        monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    finally:
        nbformat.write(nb, tmp_path / "executed.ipynb")  # for a look after a failure

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "every code cell runs, the install cell included"
    assert "AZJAX_NOTEBOOK_SKIP_INSTALL is set" in _stdout(_cell(nb, "install"))
    # The notebook turns the compilation cache on, in the directory JAX was given (here: the session's), or
    # leaves it off where AZJAX_CACHE_DIR=off says so (the test session's default, see conftest.py).
    assert f"JAX compilation cache: {cache or 'off'}" in _stdout(_cell(nb, "game"))

    run_dir = tmp_path / "runs" / "notebook_connect_four_tiny"
    assert (run_dir / "params.msgpack").is_file()
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert len(rows) == 3, "one row per step of the tiny run"
    # The loss plot draws a line only through steps that ran SGD (the others log a NaN loss): two at least.
    trained = [r["step"] for r in rows if int(r["sgd_applied"]) > 0 and math.isfinite(float(r["loss"]))]
    assert len(trained) >= 2, ("tiny mode must train; (step, sgd_applied, replay_positions, loss): "
                               f"{[(r['step'], r['sgd_applied'], r['replay_positions'], r['loss']) for r in rows]}")
    assert "finished: True after 3 steps" in _stdout(_cell(nb, "train"))

    assert _data(_cell(nb, "curves"), "image/png"), "the learning-curve figure is shown"
    for cell_id in ("game", "play"):
        svgs = _data(_cell(nb, cell_id), "image/svg+xml")
        assert svgs and "<svg" in svgs[0], f"cell {cell_id!r} draws the board as SVG"

    played = _stdout(_cell(nb, "play"))
    assert "you play 4" in played
    assert "azjax plays" in played


@pytest.mark.parametrize("platform, fits, chosen", [("cpu", True, "quick"), ("gpu", True, "full"),
                                                     ("gpu", False, "quick")])
def test_the_config_cell_picks_full_on_an_accelerator_it_fits_and_says_so(monkeypatch, capsys, platform, fits,
                                                                          chosen):
    import azjax.train.plan as plan_module

    class Device:  # what the cell reads of jax.devices()[0]
        device_kind = "a device"

    Device.platform = platform
    monkeypatch.delenv("AZJAX_NOTEBOOK_TINY", raising=False)
    monkeypatch.setattr(jax, "devices", lambda *a: [Device()])
    monkeypatch.setattr(plan_module, "device_memory", lambda device: 16 * 2**30)
    monkeypatch.setattr(plan_module.Plan, "fits", lambda self, size: fits)
    source = _cell(nbformat.read(NOTEBOOK, as_version=4), "config").source
    namespace = {"os": os, "Path": Path}
    exec(source, namespace)  # the cell itself
    assert namespace["config"].num_envs == (1024 if chosen == "full" else 256)
    assert f"the {chosen!r} preset" in capsys.readouterr().out
