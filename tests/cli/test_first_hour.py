"""A newcomer's first hour (issue 32): nothing saved is overwritten, every bad input is one line and exit status 2,
a refused start leaves nothing behind, sweep tables say how many runs a figure is over, timings are honest.

Everything here is refused before JAX compiles anything, or exercises the host-side pieces alone."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from azjax.cli import main
from azjax.config import preset

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "results" / "models" / "connect_four_quick"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """A copy of the committed exported model (config.json and params.msgpack)."""
    return Path(shutil.copytree(MODEL, tmp_path / "model"))


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("JAX compilation cache:")]


def _exit_status(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's errors
        return int(e.code)


def test_resume_into_an_exported_model_is_refused_and_its_files_are_unchanged(model, tmp_path, capsys):
    before = _files(model)
    assert _exit_status(["train", "--resume", str(model), "--no-progress"]) == 2
    (line,) = _error_lines(capsys.readouterr().err)
    assert "is an exported model, not a run directory" in line
    assert _files(model) == before, "the model directory is exactly as it was: nothing written, nothing added"


@pytest.mark.parametrize("argv", [
    ["train", "--run_dir", "{model}", "--no-progress"],
    ["train", "--run_dir", "{model}/inside", "--no-progress"],
    ["sweep", "--run_dir", "{model}/sweep", "--no-progress"],
    ["eval", "random", "random", "--game", "connect_four", "--games", "2", "--out", "{model}/params.msgpack"],
    ["analyze", "--checkpoint", "{model}", "--positions", "p.txt", "--out", "{model}/a.jsonl"],
    ["arena", "random", "random", "--game", "connect_four", "--games", "2", "--out_dir", "{model}"],
])
def test_every_command_that_writes_refuses_to_write_into_an_exported_model(argv, model, capsys):
    before = _files(model)
    assert _exit_status([a.replace("{model}", str(model)) for a in argv]) == 2
    (line,) = _error_lines(capsys.readouterr().err)
    assert f"lies in the exported model {model}" in line or "already holds a run" in line
    assert _files(model) == before


def test_export_refuses_to_overwrite_a_run_or_its_own_source(model, tmp_path, capsys):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for name in ("config.json", "params.msgpack"):
        shutil.copyfile(model / name, run / name)
    before = _files(run)
    assert main(["export", str(model), str(run)]) == 2
    assert "holds a training run" in capsys.readouterr().err
    assert main(["export", str(model), str(model)]) == 2
    assert "onto itself" in capsys.readouterr().err
    assert _files(run) == before


@pytest.mark.parametrize("argv, flag", [
    (["eval", "{model}", "random", "--simulations", "-5"], "--simulations"),
    (["eval", "{model}", "random", "--simulations", "0"], "--simulations"),
    (["eval", "{model}", "random", "--games", "3"], "--games"),
    (["analyze", "--checkpoint", "{model}", "--visits", "-5"], "--visits"),
    (["analyze", "--checkpoint", "{model}", "--visits", "0"], "--visits"),
    (["play", "{model}", "--simulations", "0"], "--simulations"),
    (["gtp", "--checkpoint", "{model}", "--visits", "0"], "--visits"),
    (["uci", "--checkpoint", "{model}", "--visits", "-5"], "--visits"),
    (["arena", "{model}", "random", "--simulations", "0"], "--simulations"),
    (["arena", "{model}", "random", "--max_plies", "0"], "--max_plies"),
    (["train", "--minutes", "0"], "--minutes"),
    (["sweep", "--seeds", "0"], "--seeds"),
    (["export", "{model}", "out", "--step", "-1"], "--step"),
    (["bench", "--rounds", "0"], "--rounds"),
    (["bench", "--scaling", "16,-4"], "--scaling"),
])
def test_negative_and_zero_counts_get_one_line_and_exit_status_2(argv, flag, model, capsys):
    assert _exit_status([a.replace("{model}", str(model)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = _error_lines(err)
    assert "error:" in line and flag in line


@pytest.mark.parametrize("argv, typo", [
    (["train", "--num_simulation", "5"], "--num_simulation"),
    (["eval", "random", "random", "--game", "connect_four", "--sim", "4"], "--sim"),
    (["bench", "--round", "1"], "--round"),
])
def test_an_abbreviated_flag_is_refused_not_taken_for_the_whole_flag(argv, typo, capsys):
    assert _exit_status(argv) == 2
    (line,) = _error_lines(capsys.readouterr().err)
    assert f"unrecognized arguments: {typo}" in line


def test_a_start_refused_for_the_device_count_leaves_no_directory(tmp_path):
    # Two CPU devices need a fresh process (the split is made before JAX starts its backend).
    code = ("import sys; from azjax.cli import main; "
            "print(main(sys.argv[1:4]), main(sys.argv[4:]))")
    env = {**os.environ, "AZJAX_CPU_DEVICES": "2", "PYTHONPATH": str(ROOT)}
    argv = ["train", f"--run_dir={tmp_path / 'run'}", "--num_envs=3",
            "sweep", f"--run_dir={tmp_path / 'sweep'}", "--num_envs=3", "--no-progress"]
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)
    assert proc.stdout.split()[-2:] == ["2", "2"], proc.stderr[-2000:]
    assert proc.stderr.count("num_envs=3 is not divisible by the 2 devices") == 2
    assert not (tmp_path / "run").exists() and not (tmp_path / "sweep").exists()


def _fake_run(run: Path, losses: list[float]) -> None:
    run.mkdir(parents=True)
    lines = ["step,loss,policy_loss,value_loss"] + [f"{i + 1},{v},{v},{v}" for i, v in enumerate(losses)]
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")


def test_a_sweep_with_a_run_short_of_sgd_reports_n_1_and_its_plot_says_why(tmp_path, monkeypatch):
    from azjax.train import sweep as sweep_module

    nan = float("nan")
    _fake_run(tmp_path / "run_0", [nan, 2.5, 2.4])
    _fake_run(tmp_path / "run_1", [nan, nan, nan])  # replay never reached min_replay_size
    _fake_run(tmp_path / "run_2", [nan, nan, nan])
    record = {"runs": [{"dir": "run_0", "point": {"lr": 1}}, {"dir": "run_1", "point": {"lr": 1}},
                       {"dir": "run_2", "point": {"lr": 2}}]}
    first, second = sweep_module.sweep_table(tmp_path, record)
    assert first["runs"] == 2 and first["loss"]["n"] == 1 and first["loss"]["mean"] == pytest.approx(2.4)
    assert first["note"].startswith("1 of 2 runs never reached SGD")
    assert second["runs"] == 1 and "loss" not in second
    text = "\n".join(sweep_module.table_lines([first, second]))
    assert "lr=1 (2 runs): loss 2.400" in text and "(n=1)" in text and "lr=2 (1 runs): loss - (n=0)" in text

    figures = []
    monkeypatch.setattr(sweep_module, "save_figure", lambda fig, path, dpi=100: figures.append(fig) or path)
    sweep_module.plot_sweep(tmp_path, record)
    (ax,) = figures[0].axes
    assert any("no run reached SGD" in t.get_text() and "lr=2" in t.get_text() for t in ax.texts)
    assert [h.get_label() for h in ax.get_legend().legend_handles] == [
        "lr=1 (1 of 2 seeds have a loss)", "lr=2 (0 of 1 seeds have a loss)"]


class _Terminal(io.StringIO):
    """A stream that says it is a terminal, on a file descriptor that is none (its width reads as 0)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd


def test_a_terminal_without_width_gets_plain_log_lines_not_a_silent_bar(monkeypatch):
    from azjax.train.driver import progress_bar

    read, write = os.pipe()
    try:
        stream = _Terminal(write)
        assert progress_bar(True, 0, 10, stream=stream) is None
        monkeypatch.setattr(os, "get_terminal_size", lambda fd: os.terminal_size((80, 24)))
        bar = progress_bar(True, 0, 10, stream=stream)
        assert bar is not None
        bar.close()
        assert progress_bar(False, 0, 10, stream=stream) is None
    finally:
        os.close(read)
        os.close(write)


def test_the_time_left_leaves_out_the_first_step_which_compiles(monkeypatch):
    import azjax.train.driver as train_module

    clock = train_module.StepClock(end=10)
    times = iter([95.0, 97.0, 99.0])  # the first step took 95 s (compiling), then 2 s a step
    monkeypatch.setattr(train_module.time, "perf_counter", lambda: next(times))
    clock.tick(1)
    assert clock.text(1) == "after the next step"
    clock.tick(2)
    clock.tick(3)
    assert clock.seconds_left(3) == pytest.approx(14.0)  # 7 steps left at 2 s, not at the 32 s mean
    assert clock.text(3) == "0:00:14"


def test_the_config_dump_names_the_preset_and_only_the_fields_that_differ():
    from azjax.train.driver import config_summary

    text = config_summary(preset("connect_four", "quick", num_steps=4, num_channels=8))
    ratio = "  replay ratio 4.00 (positions trained on per position played)"  # 16 x 512 per 256 x 8
    methods = "  methods on top of AlphaZero: q-mixed value targets"
    assert text.splitlines() == ["config: connect_four preset 'quick', changed:", "  num_channels = 8",
                                 "  num_steps = 4", methods, ratio]
    hour = "  methods on top of AlphaZero: random openings, q-mixed value targets"
    assert config_summary(preset("connect_four", "hour")) == (f"config: connect_four preset 'hour', unchanged\n"
                                                              f"{hour}\n{ratio}")
    # A search-contempt setting the simulation budget makes inert is named as such, not only as a method on.
    assert config_summary(preset("connect_four", "hour", n_scl=28)).splitlines()[2:4] == [
        "  methods on top of AlphaZero: search-contempt, random openings, q-mixed value targets",
        "  note: search-contempt's n_scl 28 is inert at 16 simulations a move (no opponent node freezes; the run would "
        "repeat alphazero's exactly)"]


def test_the_fuzzer_rejects_malformed_lines_and_would_notice_one_that_slips_through():
    fuzz_cli = import_module("lab.reliability.fuzz_cli")
    result = fuzz_cli.fuzz(50, seed=0)
    assert result["lines"] == 50 and result["findings"] == [], result["findings"]
    assert set(result["by_command"]) == set(fuzz_cli.commands(Path("."), devices=1))
    # A valid line reaches the sentinel instead of playing: the harness can fail.
    with fuzz_cli.sentinels():
        outcome, _ = fuzz_cli.run_line(["eval", "random", "random", "--game", "connect_four", "--games", "2"])
    assert outcome == "accepted"


def test_the_notebook_pins_a_gpu_jax_that_matches_the_projects_pin_and_has_a_badge():
    nb = json.loads((ROOT / "notebooks" / "azjax_colab.ipynb").read_text())
    cells = {c["id"]: "".join(c["source"]) for c in nb["cells"]}
    pin = re.search(r'"jax(>=[^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert 'pin = jax_pin()' in cells["install"] and '"jax[cuda12]{pin}"' in cells["install"]
    namespace: dict = {}
    jax_pin = cells["install"].split("def jax_pin():")[1].split("\n\n\n")[0]
    exec("import importlib.metadata, re\ndef jax_pin():" + jax_pin, namespace)  # the cell's own function
    specifiers = lambda text: sorted(text.replace(" ", "").split(","))  # noqa: E731 (metadata may reorder them)
    assert specifiers(namespace["jax_pin"]()) == specifiers(pin)
    badge = re.search(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/notebooks/azjax_colab\.ipynb",
                      cells["intro"])
    repo = re.search(r'AZJAX_REPO = "https://github\.com/([^"]+)"', cells["install"]).group(1)
    ref = re.search(r'AZJAX_REF = "([^"]+)"', cells["install"]).group(1)
    assert badge and badge.groups() == (repo, ref), "the badge opens the repository the install cell installs"


def test_the_tensorboard_suggestion_names_an_extra_that_installs_it():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^tb = \["tensorboard', text, re.M)
    assert 'pip install -e ".[tb]"' in (ROOT / "docs" / "cli.md").read_text()  # where a run's outputs are listed
