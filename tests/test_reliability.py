"""Reliability under faults and bad input, at test scale: the GTP and UCI engines fuzzed through a pipe
(and property-based in-process), bad flags, configs and model files, damaged checkpoints skipped on
resume, and a training run killed with SIGKILL and resumed exactly. The full-scale counts come from
lab/reliability/fuzz_engines.py and lab/reliability/soak_resume.py (results/reliability/reliability.json)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
import threading
from importlib import import_module
from pathlib import Path

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lab.reliability.fuzz as fuzz
from azjax import checkpoint as ckpt
from azjax.cli import main
from azjax.config import Config
from azjax.engines.engine import Engine
from azjax.engines.gtp import GTPEngine, clean_line
from azjax.engines.lc0 import SearchResult
from azjax.engines.uci import UCIEngine
from azjax.train.driver import NumericalFault, numerical_fault, train
from azjax.train.loop import Trainer
from azjax.train.run_dir import read_csv
from lab.reliability.fuzz import check_gtp_reply, fuzz_gtp, fuzz_uci, make_untrained_model

REPO = Path(fuzz.__file__).parents[2]


@pytest.fixture(scope="module")

def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {g: Path(make_untrained_model(root / g, g, s))
            for g, s in (("connect_four", "gumbel"), ("go_9x9", "puct"), ("chess", "gumbel"))}


def engine_env() -> dict[str, str]:
    """The engines run this checkout's azjax and share the session's compilation cache."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env["AZJAX_CACHE_DIR"] = str(__import__("jax").config.jax_compilation_cache_dir)
    return env


def engine_argv(kind: str, model: Path) -> list[str]:
    return [sys.executable, "-m", "azjax.cli", kind, "--checkpoint", str(model)]


# ---------------------------------------------------------------- fuzzing through a pipe


@pytest.mark.slow
@pytest.mark.parametrize("game, lines", [("connect_four", 200), ("go_9x9", 100)])
def test_gtp_answers_every_malformed_line_with_a_well_formed_reply(models, game, lines):
    report = fuzz_gtp(engine_argv("gtp", models[game]), game, lines, seed=1, timeout=180, env=engine_env(),
                      quick=True)
    assert report.lines_sent == lines
    assert report.ok, report.problems


@pytest.mark.slow
def test_uci_answers_every_go_with_a_legal_bestmove_or_an_error(models):
    report = fuzz_uci(engine_argv("uci", models["chess"]), 120, seed=1, timeout=180, env=engine_env(), fens=3,
                      quick=True)
    assert report.lines_sent == 120 and report.go_commands > 10
    assert report.bestmoves > 0 and report.go_errors > 0  # both kinds of answer were exercised
    assert report.ok, report.problems


def test_the_gtp_checker_rejects_malformed_replies():
    assert check_gtp_reply(["= D4"], None) is None and check_gtp_reply(["=12 D4"], "12") is None
    assert check_gtp_reply(["?3 illegal move"], "3") is None
    assert "id" in check_gtp_reply(["= D4"], "12")
    assert "first line" in check_gtp_reply(["D4"], None)
    assert "empty line" in check_gtp_reply(["= ", "", "x"], None)


# ---------------------------------------------------------------- property-based, in-process


@pytest.fixture(scope="module")
def c4_engine(models) -> Engine:
    return Engine.from_checkpoint(str(models["connect_four"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=80))
def test_gtp_gives_one_well_formed_reply_to_any_text(c4_engine, text):
    gtp = GTPEngine(c4_engine, io.StringIO(), io.StringIO())
    line = clean_line(text.replace("\n", " ").replace("\r", " "))
    if not line:
        return
    words = [w for w in line.split(" ") if w]
    if words and words[-1] == "quit" or any(w in ("genmove", "lz-analyze", "azjax-analyze") for w in words):
        return  # a search: covered by the pipe fuzz
    reply, _ = gtp.handle(line)
    assert reply.endswith("\n\n") and "\n\n" not in reply[:-2]
    cid = words[0] if words[0].isascii() and words[0].isdigit() else None
    assert check_gtp_reply(reply[:-2].split("\n"), cid) is None, reply


@pytest.fixture(scope="module")
def chess_engine(models) -> Engine:
    return Engine.from_checkpoint(str(models["chess"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=80))
def test_uci_prints_only_well_formed_lines_for_any_text(chess_engine, text):
    text = text.replace("\n", " ").replace("\r", " ")
    if not text.strip() or text.split()[0] in ("go", "quit"):
        return
    out = io.StringIO()
    UCIEngine(chess_engine, io.StringIO(), out).handle(text.strip())
    for line in out.getvalue().splitlines():
        assert line.split(" ", 1)[0] in fuzz.UCI_KEYWORDS and not fuzz.CONTROL_CHARS.search(line), line


def run_uci(engine: Engine, commands: list[str], timeout: float = 120.0) -> list[str]:
    """A UCI session in a thread, so that a regression to a hang fails instead of stalling the suite."""
    out = io.StringIO()
    uci = UCIEngine(engine, io.StringIO("\n".join(commands) + "\n"), out)
    t = threading.Thread(target=uci.run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"the engine hung; output so far: {out.getvalue()[-500:]!r}"
    return out.getvalue().splitlines()


def test_uci_stops_an_infinite_search_when_a_command_needs_the_position(chess_engine):
    # Without a `stop` in between, the engine used to wait for one forever (it could no longer read it).
    lines = run_uci(chess_engine, ["position startpos", "go infinite", "position startpos moves e2e4",
                                   "go nodes 4", "quit"])
    best = [ln for ln in lines if ln.startswith("bestmove")]
    assert len(best) == 2
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(best[1].split()[1]) in board.legal_moves


def test_uci_caps_huge_node_counts_and_refuses_out_of_range_visits(chess_engine, monkeypatch):
    searched = []

    def search(visits=None, child_pvs=None):  # the visit counts asked for (a real search would compile first)
        searched.append(visits)
        return SearchResult("e2e4", 0, 0.0, 0.0, 0.0, visits, [], ["e2e4"], 0.0, 0.001)

    monkeypatch.setattr(chess_engine, "search", search)
    monkeypatch.setattr(chess_engine, "prepare", lambda warm_up=None: 0.0)
    lines = run_uci(chess_engine, ["setoption name Visits value 99999999999999999999",
                                   "setoption name Visits value 0", "setoption name Visits value " + "9" * 5000,
                                   "position startpos", "go nodes 99999999999999999999", "go nodes 4", "go nodes 3",
                                   "go nodes 20", "quit"])
    errors = [ln for ln in lines if ln.startswith("info string error: Visits")]
    assert len(errors) == 3 and all(len(ln) < 200 for ln in errors)
    assert "info string nodes 99999999999999999999 capped at 64 (the engine's ceiling)" in lines
    assert searched == [64, 4, 3, 20]  # any count up to 16 x Visits: the budget is an input of the one program
    assert [ln for ln in lines if ln.startswith("bestmove")] == ["bestmove e2e4"] * 4


def test_uci_escapes_control_characters_in_echoed_input(chess_engine):
    lines = run_uci(chess_engine, ["foo\x01bar\x7f\x0bbestmove e2e4", "quit"])
    assert lines == ["info string unknown command foo\\x01bar\\x7f bestmove e2e4"]


# ---------------------------------------------------------------- bad flags, configs and files


def _model_copy(models: dict[str, Path], tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(models["connect_four"], d)
    return d


CONFIG_CASES = {
    "truncated": (lambda c: c[:40], "config.json is not a valid azjax config: "),  # JSON's own reason follows
    "empty": (lambda c: b"", "config.json is not a valid azjax config: Expecting value"),
    "binary": (lambda c: bytes(range(256)), "config.json is not a valid azjax config: 'utf-8' codec"),
    "a list": (lambda c: b"[1, 2]", "a config is a JSON object of field: value pairs, not a list"),
    "unknown field": (lambda c: c.replace(b"{", b'{"nmu_blocks": 2,', 1), "unknown config field(s): nmu_blocks"),
    "wrong type": (lambda c: c.replace(b'"num_blocks": 1', b'"num_blocks": "one"'), "num_blocks has the wrong type"),
    "NaN": (lambda c: c.replace(b'"learning_rate": 0.002', b'"learning_rate": NaN'),
            "learning_rate must be a finite number, got nan"),
    "out of range": (lambda c: c.replace(b'"num_channels": 8', b'"num_channels": 0'), "num_channels must be >= 1"),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_a_malformed_config_json_gets_a_one_line_error_naming_the_file_and_field(models, tmp_path, capsys, case):
    edit, message = CONFIG_CASES[case]
    d = _model_copy(models, tmp_path, "m")
    (d / "config.json").write_bytes(edit((d / "config.json").read_bytes()))
    for command in ("gtp", "analyze"):
        argv = [command, "--checkpoint", str(d)] + (["--moves", "4"] if command == "analyze" else [])
        assert main(argv) == 2
        err = _error_lines(capsys.readouterr().err)
        assert err.count("\n") == 1 and f"{d}/config.json" in err and message in err, err


PARAMS_CASES = {
    "empty": (lambda p, other: b"", "is corrupt or not a parameter file"),
    "truncated": (lambda p, other: p[: len(p) // 2], "is corrupt or not a parameter file"),
    "random bytes": (lambda p, other: bytes(range(256)) * 4, "is corrupt or not a parameter file"),
    "another game's": (lambda p, other: other, "does not match its config's network"),
}


@pytest.mark.parametrize("case", list(PARAMS_CASES))
def test_a_corrupt_truncated_or_other_game_model_gets_a_one_line_error_naming_the_file(models, tmp_path, capsys,
                                                                                       monkeypatch, case):
    # The engine loads in the background; its input ends at once, and it exits once the load has failed.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    edit, message = PARAMS_CASES[case]
    d = _model_copy(models, tmp_path, "m")
    other = (models["go_9x9"] / "params.msgpack").read_bytes()
    (d / "params.msgpack").write_bytes(edit((d / "params.msgpack").read_bytes(), other))
    for argv in (["gtp", "--checkpoint", str(d)], ["analyze", "--checkpoint", str(d), "--moves", "4"]):
        assert main(argv) == 2
        err = _error_lines(capsys.readouterr().err)
        assert err.count("\n") == 1 and f"{d}/params.msgpack" in err and message in err, err


def test_a_directory_where_a_model_file_should_be_gets_a_clear_error(models, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    d = _model_copy(models, tmp_path, "m")
    (d / "params.msgpack").unlink()
    (d / "params.msgpack").mkdir()
    assert main(["gtp", "--checkpoint", str(d)]) == 2
    assert "params.msgpack is corrupt or not a parameter file" in capsys.readouterr().err
    (d / "config.json").unlink()
    (d / "config.json").mkdir()
    assert main(["gtp", "--checkpoint", str(d)]) == 2
    assert "config.json is not a valid azjax config" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--learning_rate", "nan"], "learning_rate must be a finite number, got nan"),
    (["--dirichlet_alpha", "inf"], "dirichlet_alpha must be a finite number, got inf"),
    (["--game", "go_9x9", "--komi=-inf"], "komi must be a finite number, got -inf"),
    (["--num_envs", "1e3"], "num_envs expects a number, got '1e3'"),
    (["--augment", "maybe"], "augment expects true/false, got 'maybe'"),
    (["--n_scl", "-1"], "n_scl must be >= 0"),
    (["--compute_dtype", "float16"], "compute_dtype must be one of float32, bfloat16"),
    (["--game", "chess", "--start", "8/8/8 w"], "bad FEN"),
])
def test_every_malformed_flag_is_refused_naming_the_field(argv, message, tmp_path, capsys):
    assert main(["train", "--run_dir", str(tmp_path / "run"), "--no-progress", *argv]) == 2
    err = _error_lines(capsys.readouterr().err)
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_non_finite_values_in_a_config_are_refused():
    with pytest.raises(ValueError, match="weight_decay must be a finite number"):
        Config(weight_decay=float("nan"))


def test_results_json_is_merged_by_key_not_overwritten(tmp_path):
    out = tmp_path / "reliability.json"
    ckpt.update_json(out, {"compile_counts": {"x": 1}})
    ckpt.update_json(out, {"fuzz": {"lines": 10}})
    assert json.loads(out.read_text()) == {"compile_counts": {"x": 1}, "fuzz": {"lines": 10}}
    out.write_text("{not json")
    with pytest.raises(ckpt.CheckpointError, match="not valid JSON"):
        ckpt.update_json(out, {"fuzz": {}})
    assert out.read_text() == "{not json"  # nothing already saved is lost


# ---------------------------------------------------------------- damaged checkpoints, kills


@pytest.mark.slow
def test_resume_skips_a_damaged_newest_checkpoint_and_matches_an_uninterrupted_run(tmp_path, tiny_overrides,
                                                                                   capsys):
    from azjax.train import METRIC_COLUMNS

    # 5 steps whose games end and train from step 3: the checkpoint resumed from holds an optimizer state that moved.
    config = Config(game="connect_four", **{**tiny_overrides, "checkpoint_every": 1, "moves_per_step": 8,
                                            "sgd_steps_per_step": 2, "num_steps": 5})
    run = tmp_path / "run"
    train(config, run, progress=False, stop_after=4)  # checkpoints at steps 1 to 4

    def loop_columns() -> list[dict[str, str]]:  # as written (strings: NaN == NaN)
        with open(run / "metrics.csv", newline="") as f:
            return [{k: r[k] for k in METRIC_COLUMNS} for r in csv.DictReader(f)]

    uninterrupted = loop_columns()  # steps 1-4 as a run that never stopped computes them
    # The newest checkpoint is damaged (a file truncated after the write), and a write of step 5 was cut off.
    data = max((f for f in (run / "checkpoints" / "4").rglob("*") if f.is_file() and f.name != ckpt.MANIFEST_FILE),
               key=lambda f: f.stat().st_size)
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    (run / "checkpoints" / "5.orbax-checkpoint-tmp-1234").mkdir()
    (run / "checkpoints" / "3" / ckpt.MANIFEST_FILE).unlink()  # as an older azjax wrote it: still loadable
    capsys.readouterr()
    train(None, run, resume=True, progress=False)
    out = capsys.readouterr().out
    assert "removing" in out and "unfinished checkpoint write" in out
    assert f"skipping checkpoint {run.absolute()}/checkpoints/4: " in out and "truncated" in out
    assert "resumed from step 3" in out
    assert not list((run / "checkpoints").glob("*tmp*")) and len(list((run / "checkpoints" / "damaged").iterdir())) == 1
    rows = loop_columns()
    assert len(rows) == 5 and rows[:4] == uninterrupted  # step 4 computed again from step 3's checkpoint, exactly
    assert float(rows[2]["sgd_applied"]) > 0 and float(rows[3]["sgd_applied"]) > 0  # through SGD and Adam's state
    (kept,) = run.glob("metrics.csv.before-resume-*")  # the forgotten row is kept aside, not lost
    assert len(list(csv.DictReader(kept.open()))) == 4
    checkpointer = ckpt.StateCheckpointer(run)
    assert sorted(checkpointer.manager.all_steps())[-1] == 5
    assert all(checkpointer.check(s) is None for s in checkpointer.manager.all_steps())


@pytest.mark.slow
def test_a_checkpoint_resumes_only_on_the_device_count_that_wrote_it(tmp_path, tiny_overrides):
    run = tmp_path / "run"
    train(Config(game="connect_four", **{**tiny_overrides, "checkpoint_every": 1}), run, progress=False, stop_after=1)
    manifest_file = run / "checkpoints" / "1" / ckpt.MANIFEST_FILE
    manifest = json.loads(manifest_file.read_text())
    assert manifest["devices"] == jax.device_count()
    manifest_file.write_text(json.dumps({**manifest, "devices": jax.device_count() + 1}))
    with pytest.raises(ckpt.CheckpointError, match=f"written by {jax.device_count() + 1} device"):
        train(None, run, resume=True, progress=False)
    assert ckpt.StateCheckpointer(run).check(1) is None  # nothing saved is lost


def test_a_nan_in_the_parameters_stops_the_run_naming_the_step_and_keeps_the_last_good_checkpoint(
        tmp_path, tiny_overrides, monkeypatch):
    config = Config(game="connect_four", **tiny_overrides)  # checkpoints at steps 2 and 4
    run = tmp_path / "run"
    real_step = Trainer.step

    def step_with_a_fault_at_3(self, state):  # noqa: ANN001, ANN202
        state, metrics = real_step(self, state)
        if int(state.step) == 3:
            leaves, treedef = jax.tree.flatten(state.params)
            leaves[0] = leaves[0].at[(0,) * leaves[0].ndim].set(jnp.nan)
            state = state.replace(params=jax.tree.unflatten(treedef, leaves))
        return state, metrics

    monkeypatch.setattr(Trainer, "step", step_with_a_fault_at_3)
    with pytest.raises(NumericalFault, match=r"^step 3: the network parameters hold NaN or inf; .*"
                                                     r"last good checkpoint is step 2 "):
        train(config, run, progress=False)
    assert sorted(ckpt.StateCheckpointer(run).manager.all_steps()) == [2]
    saved = ckpt.load_params(run, Trainer(config).init(0).params)
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(saved))


def test_a_nan_loss_is_a_fault_only_where_sgd_ran():
    params = {"w": np.ones(3, np.float32)}
    assert numerical_fault({"sgd_applied": 0, "loss": float("nan")}, params) is None  # no SGD yet: NaN by design
    assert numerical_fault({"sgd_applied": 1, "loss": float("inf"), "policy_loss": 1.0}, params) == "the loss is inf"
    assert numerical_fault({"sgd_applied": 1, "loss": 1.0}, {"w": np.array([1.0, np.inf])}) is not None


def test_a_metrics_row_cut_short_by_a_kill_is_dropped_on_reading(tmp_path):
    file = tmp_path / "metrics.csv"
    file.write_text("step,loss\n1,0.5\n2,0.4\n3,0.")  # killed while appending step 3
    assert [r["step"] for r in read_csv(file)] == ["1", "2"]
    file.write_text("step,loss\n1,0.5\n2\n")  # a row with too few fields
    assert [r["step"] for r in read_csv(file)] == ["1"]


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_the_same_metrics_and_parameters(tmp_path, tiny_overrides):
    from lab.reliability.soak import soak

    # Every field as a flag: the same config as the in-process tests, so the children reuse their compiles.
    # Games end and SGD runs from step 3 of the 4: the final parameters compared are trained ones, and a kill after
    # step 3 makes the resume restore an optimizer state that has moved.
    overrides = Config(game="connect_four", **{**tiny_overrides, "checkpoint_every": 1, "moves_per_step": 8,
                                               "sgd_steps_per_step": 2}).to_dict()
    report = soak(tmp_path, overrides, kills=2, seed=3, env=engine_env(), log=lambda m: None)
    assert report["trials_killed"] == 2 and report["resumed"] == 2
    # A round runs one fresh run to its end; a kill aimed at a phase the run has passed lands nowhere, so the two
    # kills may take two rounds. Every round must end where the uninterrupted run did.
    assert report["rounds"] and report["resumed_exactly"]
    for run in report["rounds"]:
        assert run["metric_rows_compared"] == 4 and run["final_params_equal"]
        assert run["resumed_exactly"], (run["metric_differences"], run["eval_differences"])
        assert not run["checkpoints_failing_check"] and not run["unfinished_writes_left"]


def _error_lines(err: str) -> str:
    """stderr without the compilation-cache line every command prints first."""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("JAX compilation cache:"))


# ---------------------------------------------------------------- flat memory


def test_memory_is_flat_only_when_the_heap_stays_within_ten_percent_of_its_five_minute_value():
    soak = import_module("lab.reliability.memory_soak")
    # [seconds, anonymous MiB, total MiB]: the total falls when the kernel drops file pages; the heap is flat.
    flat = soak.summarize([[0.0, 90.0, 100.0], [300.0, 1000.0, 1400.0], [1800.0, 1050.0, 1100.0],
                           [3600.0, 990.0, 1390.0]], budget_s=3600.0)
    assert flat["flat_within_10_percent"] and flat["rss_anon_mib_at_5_min"] == 1000.0
    assert flat["rss_anon_mib_at_budget_end"] == 990.0 and flat["vm_rss_mib_at_5_min"] == 1400.0
    growing = soak.summarize([[300.0, 1000.0, 1000.0], [1800.0, 1050.0, 1050.0], [3600.0, 1150.0, 1150.0]],
                             budget_s=3600.0)
    assert not growing["flat_within_10_percent"] and growing["largest_change_after_5_min"] == 0.15
    # The final checkpoint and the exit, after the budget, are recorded but not judged.
    exiting = soak.summarize([[300.0, 1000.0, 1000.0], [3600.0, 1000.0, 1000.0], [3620.0, 400.0, 500.0]],
                             budget_s=3600.0)
    assert exiting["flat_within_10_percent"] and len(exiting["samples"]) == 3
    assert soak.summarize([[10.0, 5.0, 6.0]])["flat_within_10_percent"] is None  # ended before the warm-up


def _rss_anon_mib() -> float:
    return next(int(line.split()[1]) / 1024 for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("RssAnon:"))


def test_freed_heap_memory_goes_back_to_the_os_at_once():
    """What the compiler frees stays mapped until glibc happens to trim it; the run hands it back right after the
    first step. Here: 200 MB of small blocks, freed below a block still in use (so no automatic trim)."""
    from azjax.train.driver import release_freed_memory

    if not Path("/proc/self/status").exists() or not release_freed_memory():
        pytest.skip("needs Linux with glibc (malloc_trim, /proc)")
    blocks = [bytes(1000) for _ in range(200_000)]  # above pymalloc's 512 bytes: glibc's heap
    pin = bytes(1000)  # noqa: F841  (keeps the heap's top in use)
    del blocks
    held = _rss_anon_mib()
    assert release_freed_memory()
    assert held - _rss_anon_mib() > 100


def test_the_memory_soak_samples_a_running_command_and_keeps_other_sections(tmp_path):
    out = tmp_path / "reliability.json"
    ckpt.update_json(out, {"fuzz": {"lines": 1}})
    code = "import sys, time; time.sleep(1.5); assert sys.argv[-2:] == ['--minutes', '0.5']"
    argv = ["--minutes", "0.5", "--every", "0.2", "--out", str(out), "--log", str(tmp_path / "log"),
            "--", sys.executable, "-c", code]
    assert import_module("lab.reliability.memory_soak").main(argv) == 0
    data = json.loads(out.read_text())
    assert data["fuzz"] == {"lines": 1} and data["memory"]["exit_code"] == 0
    assert len(data["memory"]["samples"]) >= 3 and all(m > 0 for _, _, m in data["memory"]["samples"])
