"""The command line end to end on a tiny config: train, resume, export, eval, play, bench; bad input; a stop by
signal; a clone of the repository that the first commands leave as it was."""

from __future__ import annotations

import builtins
import json
import os
import signal
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from azjax.cli import main
from azjax.engines.records import read_collection

ROOT = Path(__file__).resolve().parents[2]

# The loop fields are those of conftest's `tiny_overrides` (sgd_steps_per_step 1: the quick preset's 16 SGD
# steps are unrolled in the step program), so the step compiles to the program the loop tests build and comes
# from the session's compilation cache.
TINY = ["--num_envs", "8", "--num_simulations", "4", "--moves_per_step", "2", "--replay_size", "64",
        "--min_replay_size", "8", "--batch_size", "8", "--sgd_steps_per_step", "1", "--num_blocks", "1",
        "--num_channels", "8", "--temperature_moves", "4", "--eval_every", "2", "--eval_games", "4",
        "--eval_simulations", "4", "--eval_opponent_simulations", "4", "--checkpoint_every", "2",
        "--lr_warmup_steps", "1", "--log_every", "1"]


def test_tiny_cli_config_is_the_loop_tests_config(tiny_overrides):
    """What keeps the CLI test's step a cache hit: its flags give the loop tests' config."""
    from azjax.cli import build_parser
    from azjax.config import config_overrides, preset

    args = build_parser().parse_args(["train", "--game", "connect_four", "--num_steps", "4", *TINY])
    host_only = ("eval_every", "eval_games", "eval_simulations", "eval_opponent_simulations", "checkpoint_every")
    cli = preset("connect_four", **config_overrides(args))
    assert cli.replace(**{k: getattr(preset("connect_four", **tiny_overrides), k) for k in host_only}) == preset(
        "connect_four", **tiny_overrides)


@pytest.mark.slow
def test_train_eval_export_play(tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    # --stop_after stops a 4-step run after 2, its config (and so its schedule and program) unchanged.
    assert main(["train", "--game", "connect_four", "--preset", "quick", "--run_dir", str(run), "--num_steps", "4",
                 "--stop_after", "2", "--no-progress", *TINY]) == 0
    assert f"run directory: {run} (step 2)" in capsys.readouterr().out
    assert json.loads((run / "config.json").read_text())["num_steps"] == 4
    # Resume to a longer run is refused (num_steps changes the schedule); same config resumes fine.
    assert main(["train", "--resume", str(run), "--num_steps", "6", "--no-progress"]) == 2
    assert "num_steps: saved 4, given 6" in capsys.readouterr().err
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    assert f"run directory: {run} (step 4)" in (out := capsys.readouterr().out) and "score" in out
    for name in ("config.json", "params.msgpack", "metrics.csv", "eval.csv", "curves.png"):
        assert (run / name).exists(), name

    model = tmp_path / "model"
    assert main(["export", str(run), str(model)]) == 0
    assert sorted(p.name for p in model.iterdir()) == ["config.json", "params.msgpack"]
    # An earlier checkpoint exports its own parameters; a step without a checkpoint is named in the error.
    assert main(["export", str(run), str(tmp_path / "model_step4"), "--step", "4"]) == 0
    assert (tmp_path / "model_step4" / "params.msgpack").read_bytes() == (model / "params.msgpack").read_bytes()
    assert main(["export", str(run), str(tmp_path / "model_step2"), "--step", "2"]) == 0
    assert (tmp_path / "model_step2" / "params.msgpack").exists()
    assert main(["export", str(run), str(tmp_path / "model_step1"), "--step", "1"]) == 2
    assert "no checkpoint of step 1" in capsys.readouterr().err
    assert not (tmp_path / "model_step1").exists()

    out = tmp_path / "eval.json"
    assert main(["eval", f"{model}:4", "random", "--games", "4", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["games"] == 4 and result["wins"] + result["draws"] + result["losses"] == 4
    assert main(["eval", f"policy:{run}", "mcts:4", "--games", "2"]) == 0

    # A person plays first: an illegal then a malformed move are re-prompted, then 'quit'.
    answers = iter(["9", "x", "help", "4", "quit"])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(answers))
    assert main(["play", str(model), "--simulations", "4"]) == 0
    text = capsys.readouterr().out
    assert "not a Connect Four column (1-7): '9'" in text
    assert "azjax plays" in text


def azjax_command(argv: list[str]) -> list[str]:
    """`azjax ARGV` as a subprocess's command line (run it with `azjax_env`)."""
    return [sys.executable, "-m", "azjax.cli", *argv]


def azjax_env(code: Path = ROOT) -> dict[str, str]:
    """A subprocess's environment: the azjax of the checkout `code`, not whichever one is installed, and the session's
    compilation cache and XLA flags (conftest.py puts them in the environment)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")]))}


@pytest.mark.slow
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_sigint_or_sigterm_stops_training_with_a_checkpoint_that_resume_accepts_and_exits_130_or_143(
        tmp_path, capsys, signum, status):
    run = tmp_path / "run"
    # A checkpoint every 4 steps of 4: the one after the signal is the stop's own, not a periodic one.
    proc = subprocess.Popen(azjax_command(["train", "--game", "connect_four", "--preset", "quick", "--run_dir",
                                           str(run), "--num_steps", "4", "--no-progress", *TINY,
                                           "--checkpoint_every", "4"]),
                            env=azjax_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            # After the first step, in the loop with its handler: the step under way (step 2, then its
            # evaluation's compile) takes seconds, so the signal lands before the run's end.
            if line.startswith("step 1 (compiled and run)"):
                proc.send_signal(signum)
                break
        out = "".join(seen) + proc.communicate(timeout=600)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, out[-3000:]
    (step,) = [int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit()]
    assert 1 <= step < 4 and f"interrupted: checkpoint written at step {step}" in out, out[-3000:]
    assert f"run directory: {run} (step {step})" in out
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    assert f"resumed from step {step}" in (text := capsys.readouterr().out) and f"run directory: {run} (step 4)" in text


@pytest.mark.slow
def test_a_quick_bench_and_a_small_arena_leave_a_fresh_clone_as_git_checked_it_out(tmp_path):
    """What a newcomer types first, in a clone of the committed tree: their outputs go under the ignored runs/,
    and nothing committed (results/speed/bench_selfplay.json, results/arena/) is touched. The clone holds the last
    commit, not uncommitted edits."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    # The bench's flags are test_bench_without_the_plain_loop_leaves_its_figures_empty's (the same programs: a warm
    # cache in a whole session) and set no path.
    for argv in (["bench", "--game", "connect_four", "--quick", "--n_scl", "0", "--skip_plain"],
                 ["arena", "random", "mcts:8", "--game", "connect_four", "--games", "2"]):
        proc = subprocess.run(azjax_command(argv), cwd=clone, env=azjax_env(clone), capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True)
    assert status.stdout == "", f"the commands changed the checkout:\n{status.stdout}"
    assert json.loads((clone / "runs" / "bench" / "bench_selfplay.json").read_text())["results"]
    assert len(json.loads((clone / "runs" / "arena" / "results.json").read_text())["pairings"]) == 1
    assert len(read_collection(clone / "runs" / "arena" / "games.txt")) == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--game", "connect_four", "--num_simulations", "-3"], "num_simulations must be >= 1"),
        (["train", "--game", "connect_four", "--search", "alphabeta"], "search must be one of"),
        (["train", "--game", "connect_four", "--preset", "huge"], "unknown preset 'huge'"),
        (["train", "--game", "connect_four", "--learning_rate", "fast"], "learning_rate expects a number"),
        (["eval", "mcts:x", "random", "--game", "connect_four"], "mcts:N needs a positive number"),
        (["eval", "nowhere/model", "random", "--game", "connect_four"], "unknown agent 'nowhere/model'"),
        (["eval", "random", "random"], "needs --game"),
        (["play", "/nonexistent/run"], "neither a run directory nor an exported model"),
        (["eval", "random", "random", "--game", "go_5x5"], "unknown game 'go_5x5'"),
    ],
)
def test_bad_input_gets_a_clear_error(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_bench_quick_writes_json_with_a_phase_breakdown_and_search_scaling(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", "--game", "connect_four", "--quick", "--n_scl", "0", "--breakdown", "--scaling", "4,8",
                 "--scaling_envs", "2", "--out", str(out)]) == 0
    data = json.loads(Path(out).read_text())
    for key in ("sims_per_s", "net_only_evals_per_s", "plain_loop_sims_per_s", "ratio_vs_net_only",
                "ratio_vs_plain_loop"):
        assert data[key] > 0
    (breakdown,) = data["breakdown"]
    for phase in ("search", "network", "game_steps", "move", "replay_write", "sgd", "loop_step"):
        assert breakdown["seconds"][phase] > 0
    assert sum(breakdown["share_of_phases"][k] for k in ("search", "move", "replay_write", "sgd")) == pytest.approx(
        1.0, abs=0.01)
    assert [row["visits"] for row in data["search_scaling"]] == [4, 8]
    assert all(row["azjax_search_s"] > 0 and row["mctx_search_s"] > 0 for row in data["search_scaling"])
    assert data["command"].startswith("azjax bench --game connect_four --quick")


@pytest.mark.slow
def test_bench_times_a_win_draw_loss_network_given_as_a_config_flag(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", "--game", "connect_four", "--quick", "--n_scl", "0", "--value_head", "wdl",
                 "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["results"]
    assert row["value_head"] == "wdl" and row["sims_per_s"] > 0 and row["plain_loop_sims_per_s"] > 0


def test_the_bench_script_rewrites_the_committed_measurement_unless_given_another_out():
    with_out = import_module("scripts.bench_selfplay").with_results_out
    assert with_out(["--game", "go_9x9"]) == ["--game", "go_9x9", "--out", "results/speed/bench_selfplay.json"]
    assert with_out(["--out", "x.json"]) == ["--out", "x.json"] and with_out(["--out=x.json"]) == ["--out=x.json"]


def test_bench_without_the_plain_loop_leaves_its_figures_empty(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", "--game", "connect_four", "--quick", "--n_scl", "0", "--skip_plain", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    (row,) = data["results"]
    assert row["sims_per_s"] > 0 and row["ratio_vs_net_only"] > 0 and "plain" not in row["seconds_per_round"]
    assert row["plain_loop_sims_per_s"] is None and data["ratio_vs_plain_loop"] is None


@pytest.mark.slow
def test_bench_devices_times_the_training_step_on_one_device_and_on_the_cpu_split(tmp_path):
    out = tmp_path / "bench.json"
    # The session's XLA flags (conftest's fast compiles) without any device count of their own: AZJAX_CPU_DEVICES
    # leaves a count already in XLA_FLAGS alone.
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split()
                     if not f.startswith("--xla_force_host_platform_device_count"))
    proc = subprocess.run([sys.executable, "-m", "azjax.cli", "bench", "--game", "connect_four", "--quick", "--n_scl",
                           "0", "--devices", "--skip_loop", "--out", str(out)],
                          env={**os.environ, "XLA_FLAGS": flags, "AZJAX_CPU_DEVICES": "2"}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["results"] == []  # --skip_loop: the device rows alone
    (row,) = data["devices"]
    assert row["devices"] == 2 and row["step_s_one_device"] > 0 and row["step_s_all_devices"] > 0
    assert row["speedup_all_devices"] == pytest.approx(row["step_s_one_device"] / row["step_s_all_devices"], rel=0.01)


def test_bench_devices_on_one_device_says_how_to_get_more(tmp_path, capsys):
    assert main(["bench", "--game", "connect_four", "--quick", "--devices", "--out", str(tmp_path / "b.json")]) == 2
    assert "AZJAX_CPU_DEVICES=2" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()
