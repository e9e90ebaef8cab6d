"""Connect Four evaluation scripts: Pons' test sets, the match against OpenSpiel's MCTS-Solver and the
search-contempt odds experiment (tiny models, a few dozen positions, a few games)."""

from __future__ import annotations

import json
import sys
from importlib import import_module
from pathlib import Path

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from outside_programs import open_spiel

from azjax.build import game_named as base_game
from azjax.build import init_params, make_network
from azjax.checkpoint import load_config, load_params
from azjax.engines.records import chess_pgn, game_record, read_collection, write_collection
from azjax.games import make_game
from azjax.play.agents import Agent, policy_agent, random_agent
from azjax.play.benchmarks import PONS_SETS, agent_moves, grade_agent, grade_moves, load_pons, value_by_result
from azjax.play.selfplay_stats import replay_moves
from azjax.play.specs import parse_agent

ROOT = Path(__file__).resolve().parent.parent
# The first 8 positions of each of Pons' sets (24 of begin_hard), from azjax/data/connect_four_pons.jsonl.
SAMPLE = ROOT / "tests" / "test_data" / "connect_four_pons_sample.jsonl"


def constant_evaluator(params, states):
    """A network that knows nothing: uniform policy, value 0."""
    del params
    batch = states.current_player.shape[0]
    return jnp.zeros((batch, 7)), jnp.zeros(batch)


def column_agent(name: str, rightmost: bool) -> Agent:
    """Always plays the leftmost (or rightmost) legal column."""

    def act(params, key, states):
        legal = states.legal_action_mask
        return (6 - jnp.argmax(legal[:, ::-1], axis=-1) if rightmost else jnp.argmax(legal, axis=-1)).astype(jnp.int32)

    return Agent(name=name, act=act)


@pytest.fixture(scope="module")
def game():
    return base_game("connect_four")


@pytest.fixture(scope="module")
def sample():
    return load_pons(SAMPLE)


@pytest.fixture(scope="module")
def tiny_model(c4_quick_untrained) -> str:
    """An untrained 1x8 Connect Four model directory (the scripts load it like `azjax eval` does)."""
    return str(c4_quick_untrained)


# ---------------------------------------------------------------- Pons' test sets


def test_pons_positions_replayed_on_device_have_exactly_the_benchmarks_legal_columns(game, sample):
    assert list(sample) == list(PONS_SETS)
    assert sample["begin_hard"].size == 24 and sample["end_easy"].size == 8
    for pons_set in sample.values():
        states = replay_moves(game, pons_set.moves)
        assert not np.asarray(states.terminated).any()
        np.testing.assert_array_equal(np.asarray(states.legal_action_mask), ~np.isnan(pons_set.move_scores))
        # the side to move alternates: a position after k moves has move number k
        np.testing.assert_array_equal(np.asarray(states.move_number), (pons_set.moves >= 0).sum(axis=1))
        np.testing.assert_array_equal(np.nanmax(pons_set.move_scores, axis=1), pons_set.score)


def test_grading_counts_a_move_as_an_error_only_when_it_changes_the_result():
    scores = np.array([[np.nan, -1, 0, 2, 1, np.nan, -3]] * 6)
    actions = np.array([3, 4, 2, 1, 0, 9])  # best win, slower win, draw, loss, full column, off the board
    errors, not_optimal = grade_moves(actions, scores)
    assert errors.tolist() == [False, False, True, True, True, True]
    assert not_optimal.tolist() == [False, True, True, True, True, True]
    drawn = np.array([[0.0, -2, 0, np.nan, -1, 0, -5]])  # a drawn position: any drawing move is fine
    assert grade_moves(np.array([5]), drawn)[0].tolist() == [False]
    assert grade_moves(np.array([4]), drawn)[0].tolist() == [True]


def test_a_perfect_oracle_makes_no_errors_on_any_set(sample):
    for pons_set in sample.values():
        errors, not_optimal = grade_moves(np.nanargmax(pons_set.move_scores, axis=1), pons_set.move_scores)
        assert errors.sum() == 0 and not_optimal.sum() == 0


def test_a_random_player_makes_many_errors(game, sample):
    grades = [grade_agent(game, random_agent(game), s, jax.random.key(0)) for s in sample.values()]
    errors = sum(g.errors for g in grades)
    positions = sum(g.positions for g in grades)
    assert positions == 64
    assert errors / positions > 0.15  # about a third on the full sets
    for g in grades:  # split by the position's result; a lost position has no result-changing move
        assert sum(n for n, _ in g.by_result.values()) == g.positions
        assert sum(e for _, e in g.by_result.values()) == g.errors and g.by_result["loss"][1] == 0
    assert sum(g.by_result["win"][1] + g.by_result["draw"][1] for g in grades) == errors
    assert grades[0].to_dict()["by_result"]["win"]["positions"] == grades[0].by_result["win"][0]


def test_a_constant_network_errs_on_begin_hard(game, sample):
    hard = sample["begin_hard"]
    raw = policy_agent(game, constant_evaluator)
    grade = grade_agent(game, raw, hard, jax.random.key(0))
    assert grade.positions == 24 and grade.errors > 0
    # a uniform policy's argmax is the leftmost legal column
    np.testing.assert_array_equal(agent_moves(game, raw, hard.moves, jax.random.key(0)),
                                  np.argmax(~np.isnan(hard.move_scores), axis=1))


def test_value_by_result_orders_won_above_lost_positions_only_for_a_value_that_knows_them():
    score = np.array([3, 1, 0, -2, -5, 0])
    oracle = np.sign(score).astype(float)
    knows = value_by_result(oracle, score)
    assert knows["win_loss_auc"] == 1.0 and value_by_result(-oracle, score)["win_loss_auc"] == 0.0
    assert knows["by_result"]["win"] == dict(positions=2, mean=1.0, sd=0.0)
    assert knows["by_result"]["draw"]["positions"] == 2 and knows["by_result"]["loss"]["mean"] == -1.0
    constant = value_by_result(np.full(6, 0.3), score)
    assert constant["win_loss_auc"] == 0.5 and constant["by_result"]["win"]["mean"] == pytest.approx(0.3)
    # one won position valued below one lost one: 3 of 4 pairs in order
    assert value_by_result(np.array([0.9, -0.5, 0, -0.2, -0.8, 0]), score)["win_loss_auc"] == 0.75


def test_without_a_path_the_pons_sets_load_from_the_copy_in_the_package():
    sets = load_pons(None, ["end_easy", "begin_hard"], 3)
    assert list(sets) == ["end_easy", "begin_hard"] and all(s.size == 3 for s in sets.values())


@pytest.mark.parametrize(("script", "argv"), [("pons_benchmark", ["random"]), ("pons_values", ["model"]),
                                             ("pons_coverage", ["run", "random"]), ("variants_connect_four", [])])
def test_a_pons_scripts_recorded_arguments_name_no_path_of_the_machine_by_default(script, argv):
    """The scripts write their arguments into results/: the default data file is recorded as None (the packaged
    copy), not as where the package happens to be installed."""
    module = import_module(f"lab.connect_four.{script}")
    args = module.build_parser().parse_args(argv) if hasattr(module, "build_parser") else module.parse_args(argv)
    assert args.data is None


@pytest.mark.slow
def test_pons_values_script_writes_each_sets_values_by_result_and_the_command(tiny_model, tmp_path):
    out = tmp_path / "values.json"
    argv = [tiny_model, "--data", str(SAMPLE), "--sets", "begin_hard", "end_easy", "--search", "--out", str(out)]
    assert import_module("lab.connect_four.pons_values").main(argv) == 0
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m lab.connect_four.pons_values ")
    (model,) = data["results"]
    assert model["model"] == tiny_model and [r["set"] for r in model["sets"]] == ["begin_hard", "end_easy"]
    assert model["search"]["simulations"] >= 1
    hard = model["sets"][0]
    for name in ("net", "q_root", "q_policy"):
        assert sum(v["positions"] for v in hard[name]["by_result"].values()) == 24
        assert 0.0 <= hard[name]["win_loss_auc"] <= 1.0


def test_agent_moves_in_batches_equal_one_batch(game, sample):
    hard = sample["begin_hard"]
    agent = policy_agent(game, constant_evaluator)
    whole = agent_moves(game, agent, hard.moves, jax.random.key(0))
    np.testing.assert_array_equal(agent_moves(game, agent, hard.moves, jax.random.key(0), batch_size=10), whole)


def test_pons_coverage_splits_the_errors_by_whether_self_play_reached_the_position(game, sample, tiny_model,
                                                                                    tmp_path):
    from azjax.train.measures import UniqueStates

    hard = sample["begin_hard"]
    reached = UniqueStates()
    reached.add(np.asarray(replay_moves(game, hard.moves[[0, 2, 5]]).observation))  # three of the first eight
    reached.save(tmp_path / "run", step=7)
    out = tmp_path / "coverage.json"
    argv = [str(tmp_path / "run"), f"policy:{tiny_model}", "--data", str(SAMPLE), "--sets", "begin_hard",
            "--limit", "8", "--out", str(out)]
    assert import_module("lab.connect_four.pons_coverage").main(argv) == 0
    summary = json.loads(out.read_text())
    assert summary["command"].startswith("python -m lab.connect_four.pons_coverage ") and summary["step"] == 7
    (row,) = summary["results"][0]["sets"]
    assert (row["visited"]["positions"], row["unvisited"]["positions"]) == (3, 5)
    policy = summary["results"][0]["spec"]
    player, _ = parse_agent(policy, "connect_four", 64)
    first8 = load_pons(SAMPLE, ["begin_hard"], 8)["begin_hard"]
    errors = grade_moves(agent_moves(game, player.agent, first8.moves, jax.random.key(0)), first8.move_scores)[0]
    assert row["visited"]["errors"] == int(np.asarray(errors)[[0, 2, 5]].sum())
    assert row["visited"]["errors"] + row["unvisited"]["errors"] == int(np.asarray(errors).sum())


def test_pons_script_writes_error_rates_with_intervals_and_the_command(tiny_model, tmp_path):
    out = tmp_path / "pons.json"
    argv = [f"{tiny_model}:2:search=puct", f"policy:{tiny_model}", "--data", str(SAMPLE),
            "--sets", "begin_hard", "end_easy", "--limit", "8", "--out", str(out)]  # fmt: skip
    assert import_module("lab.connect_four.pons_benchmark").main(argv) == 0
    summary = json.loads(out.read_text())
    assert summary["command"].startswith("python -m lab.connect_four.pons_benchmark ")
    assert "--sets begin_hard end_easy" in summary["command"]
    assert [r["spec"] for r in summary["results"]] == argv[:2]
    for r in summary["results"]:
        assert [s["set"] for s in r["sets"]] == ["begin_hard", "end_easy"]
        for s in r["sets"]:
            assert s["positions"] == 8  # --limit: one batch shape, one compilation per agent
            assert s["error_rate"] == s["errors"] / s["positions"]
            assert s["error_low"] <= s["error_rate"] <= s["error_high"]
            assert s["errors"] <= s["not_optimal"]


# ---------------------------------------------------------------- OpenSpiel's MCTS-Solver


def test_vs_mcts_solver_says_how_to_install_open_spiel_when_it_is_missing(monkeypatch):
    solver = import_module("lab.connect_four.vs_mcts_solver")
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # makes `import pyspiel` fail
    with pytest.raises(SystemExit, match="pip install open-spiel"):
        solver.import_open_spiel()


def test_pgx_and_open_spiel_columns_reach_the_same_positions_and_results(game):
    pyspiel = open_spiel()
    solver = import_module("lab.connect_four.vs_mcts_solver")
    spiel_game = pyspiel.load_game("connect_four")
    rng = np.random.default_rng(0)
    step = jax.jit(game.step)
    results = set()
    # two hand-made wins (a column for the first player, a row for the second), then random games
    lines = [[0, 1, 0, 1, 0, 1, 0], [6, 0, 6, 1, 5, 2, 6, 3]] + [None] * 12
    for line in lines:
        state, spiel_state = game.init(jax.random.key(0)), spiel_game.new_initial_state()
        first = int(state.current_player)
        ply = 0
        while not bool(state.terminated):
            legal = np.flatnonzero(np.asarray(state.legal_action_mask))
            action = line[ply] if line is not None else int(rng.choice(legal))
            state = step(state, action)
            spiel_state.apply_action(solver.spiel_action(action))
            solver.check_same_position(state, spiel_state)
            ply += 1
        pgx_result = float(np.asarray(state.rewards)[first])  # the first player's result
        assert pgx_result == spiel_state.returns()[0]
        results.add(pgx_result)
        if line is not None:
            assert ply == len(line) and pgx_result == (1.0 if len(line) % 2 else -1.0)
    assert {-1.0, 1.0} <= results


def test_vs_mcts_solver_script_plays_both_colours_after_each_opening(tiny_model, tmp_path):
    open_spiel()
    out = tmp_path / "solver.json"
    argv = [f"policy:{tiny_model}", "--games", "4", "--simulations", "20", "--random_opening_plies", "2",
            "--out", str(out)]  # fmt: skip
    assert import_module("lab.connect_four.vs_mcts_solver").main(argv) == 0
    summary = json.loads(out.read_text())
    assert summary["command"].startswith("python -m lab.connect_four.vs_mcts_solver policy:")
    r = summary["result"]
    assert r["games"] == 4 and r["wins"] + r["draws"] + r["losses"] == 4
    assert r["score"] == (r["wins"] + 0.5 * r["draws"]) / 4 and r["score_low"] <= r["score"] <= r["score_high"]
    games = summary["games"]
    assert [g["azjax_first"] for g in games] == [True, False, True, False]
    for a, b in (games[:2], games[2:]):
        assert a["opening"] == b["opening"] and len(a["opening"]) == 2
        assert a["moves"][:2] == a["opening"] and b["moves"][:2] == b["opening"]
    assert sorted(g["outcome"] for g in games) == sorted([1.0] * r["wins"] + [0.0] * r["draws"] + [-1.0] * r["losses"])


# ---------------------------------------------------------------- search-contempt odds


def test_the_odds_giver_always_moves_second_and_results_are_from_its_view(game):
    odds = import_module("lab.contempt.contempt_odds_connect_four")
    # The opponent's first move is random, then it stacks the rightmost column; the giver stacks the
    # leftmost. The giver, moving second, completes column 1 first unless the random move was in column 7.
    opponent = column_agent("right", rightmost=True)
    opponent = Agent(name="right+1random", act=odds.random_start_act(opponent.act, 2))
    row = odds.play_cell(game, column_agent("left", rightmost=False), opponent, num_games=24, batch=12, seed=0)
    games = row["games_played"]
    assert len(games) == 24 and row["games"] == 24
    assert {g["moves"][0] for g in games} > {"7"}  # random first moves, column 7 among them
    for g in games:
        moves = g["moves"]
        opening_in_7 = moves[0] == "7"
        assert g["result"] == (-1.0 if opening_in_7 else 1.0), moves
        assert len(moves) == (7 if opening_in_7 else 8)
        assert set(moves[1::2]) == {"1"} and set(moves[2::2]) == {"7"}
    assert row["losses"] == sum(g["moves"][0] == "7" for g in games) and row["draws"] == 0


@pytest.mark.slow
def test_contempt_odds_script_writes_cells_and_a_plot(tiny_model, tmp_path):
    out, png = tmp_path / "odds.json", tmp_path / "odds.png"
    argv = ["--checkpoint", tiny_model, "--opponent", "random", "--visits", "4", "--n_scl", "off", "28", "2",
            "--games", "4", "--out", str(out), "--plot", str(png)]  # fmt: skip
    assert import_module("lab.contempt.contempt_odds_connect_four").main(argv) == 0
    summary = json.loads(out.read_text())
    assert "partial" not in summary
    assert summary["command"].startswith("python -m lab.contempt.contempt_odds_connect_four")
    cells = summary["cells"]
    assert [(c["visits"], c["n_scl"]) for c in cells] == [(4, "off"), (4, 28), (4, 2)]
    for c in cells:
        assert c["games"] == 4 and c["wins"] + c["draws"] + c["losses"] == 4 and c["seconds"] >= 0
        assert c["score_low"] <= c["score"] <= c["score_high"]
    # N_scl above the visit budget never freezes a node: the very same games as plain PUCT
    assert cells[1]["games_played"] == cells[0]["games_played"]
    assert png.stat().st_size > 1000


def test_variants_summary_pairs_seeds_and_reports_the_area_under_each_curve(tmp_path):
    variants = import_module("lab.connect_four.variants_connect_four")
    assert variants.area_under_curve([0, 1, 3], [0.4, 0.2, 0.2]) == pytest.approx((0.3 + 0.4) / 3)

    def run(variant, seed, errors):
        return dict(variant=variant, seed=seed, curve=[dict(self_play_positions=x, error_rate=e)
                                                       for x, e in zip([1000, 2000, 3000], errors, strict=True)])

    runs = [run("alphazero", 0, [0.4, 0.3, 0.3]), run("alphazero", 1, [0.5, 0.3, 0.2]),
            run("alphazero", 2, [0.4, 0.4, 0.3]), run("go_exploit_visited", 0, [0.3, 0.2, 0.2]),
            run("go_exploit_visited", 1, [0.4, 0.2, 0.1]), run("go_exploit_visited", 2, [0.3, 0.3, 0.2])]
    out = tmp_path / "v.json"
    out.write_text(json.dumps(dict(runs=runs)))
    assert variants.main(["--summarise", "--out", str(out), "--plot", str(tmp_path / "v.png")]) == 0
    table = json.loads(out.read_text())["table"]
    assert table["alphazero"]["auc_mean"] == pytest.approx((0.325 + 0.325 + 0.375) / 3)
    row = table["go_exploit_visited"]
    assert row["auc_minus_alphazero"] == pytest.approx(-0.1) and row["seeds_paired"] == 3
    assert row["diff_low"] == pytest.approx(-0.1) and row["beats_alphazero"]  # the same gain on every seed
    assert (tmp_path / "v.png").stat().st_size > 0


def test_a_resumed_variants_sweep_keeps_the_runs_it_has_and_refuses_one_graded_differently(tmp_path):
    variants = import_module("lab.connect_four.variants_connect_four")
    args = variants.build_parser().parse_args(["--variants", "alphazero", "contempt_5", "--seeds", "1",
                                               "--num_steps", "2", "--evals", "1", "--plot", ""])
    curve = [dict(self_play_positions=x, error_rate=0.3) for x in (1000, 2000)]
    runs = [dict(variant=v, seed=0, curve=curve) for v in ("alphazero", "contempt_5", "tdleaf_0.7")]
    out = tmp_path / "v.json"
    out.write_text(json.dumps(dict(args=vars(args), runs=runs,
                                   command="python -m lab.connect_four.variants_connect_four --first",
                                   renamed="made as w.json", devices=[str(d) for d in jax.local_devices()])))
    assert [r["variant"] for r in variants.resumable_runs(json.loads(out.read_text()), args,
                                                          [str(d) for d in jax.local_devices()])] == [
        "alphazero", "contempt_5", "tdleaf_0.7"]  # a variant this sweep does not run is kept, not dropped
    # Every (variant, seed) is already there: nothing trains, and the file keeps them with a fresh table.
    argv = ["--variants", "alphazero", "contempt_5", "--seeds", "1", "--num_steps", "2", "--evals", "1",
            "--resume", "--out", str(out), "--plot", ""]
    assert variants.main(argv) == 0
    summary = json.loads(out.read_text())
    assert [r["variant"] for r in summary["runs"]] == ["alphazero", "contempt_5", "tdleaf_0.7"]
    assert summary["variants"] == ["alphazero", "tdleaf_0.7", "contempt_5"]  # in VARIANTS' order
    assert summary["variant_switches"]["tdleaf_0.7"] == dict(td_lambda=0.7)
    # The file still says where its runs came from.
    assert summary["earlier_commands"] == ["python -m lab.connect_four.variants_connect_four --first"]
    assert summary["renamed"] == "made as w.json"
    with pytest.raises(SystemExit, match="--num_steps 2, not 3"):
        variants.main([*argv[:6], "3", *argv[7:]])
    # Runs made on a CPU split otherwise (AZJAX_CPU_DEVICES) are not mixed with this process's.
    out.write_text(json.dumps({**summary, "devices": ["cpu:0", "cpu:1", "cpu:2"]}))
    with pytest.raises(SystemExit, match="set AZJAX_CPU_DEVICES as it was"):
        variants.main(argv)


def test_a_variants_sweep_refuses_a_contempt_setting_its_simulation_budget_makes_inert_before_running_any(tmp_path):
    variants = import_module("lab.connect_four.variants_connect_four")
    out = tmp_path / "v.json"
    with pytest.raises(SystemExit, match="contempt_28 with --preset hour: n_scl 28 is inert"):
        variants.main(["--preset", "hour", "--variants", "alphazero", "contempt_28", "--seeds", "1", "--num_steps",
                       "1", "--evals", "1", "--sets", "end_easy", "--limit", "1", "--out", str(out), "--plot", ""])
    assert not out.exists()  # alphazero, listed first, did not train either


@pytest.mark.slow
def test_a_variants_run_cut_off_by_its_minutes_goes_on_from_its_checkpoint_as_if_never_stopped(tmp_path,
                                                                                               tiny_overrides):
    variants = import_module("lab.connect_four.variants_connect_four")
    tiny = [f"{k}={v}" for k, v in tiny_overrides.items() if k not in ("num_steps", "eval_every")]
    argv = ["--variants", "alphazero", "--seeds", "1", "--num_steps", "4", "--evals", "2", "--sims", "2",
            "--sets", "begin_easy", "--limit", "4", "--mcts_games", "0", "--probe_games", "0", "--plot", "",
            "--checkpoint_every", "2"]
    whole, cut, kept = tmp_path / "whole.json", tmp_path / "cut.json", str(tmp_path / "c")
    assert variants.main([*argv, "--out", str(whole), "--checkpoint_dir", str(tmp_path / "w"),
                          "--override", *tiny]) == 0
    # Stopped by its time after its first step, the run checkpoints there and writes no results yet.
    stopped = [*argv, "--out", str(cut), "--checkpoint_dir", kept, "--resume"]
    assert variants.main([*stopped, "--minutes", "1e-9", "--override", *tiny]) == 0
    assert not cut.exists()
    assert json.loads((tmp_path / "c" / "alphazero_seed0" / variants.PROGRESS_FILE).read_text())["step"] == 1
    assert variants.main([*stopped, "--override", *tiny]) == 0
    (a,), (b,) = json.loads(whole.read_text())["runs"], json.loads(cut.read_text())["runs"]
    drop_minutes = lambda curve: [{k: v for k, v in p.items() if k != "minutes"} for p in curve]  # noqa: E731
    assert drop_minutes(b["curve"]) == drop_minutes(a["curve"]) and len(a["curve"]) == 2
    assert b["games"] == a["games"] and b["trainable_in_final_replay"] == a["trainable_in_final_replay"]
    # A checkpoint of a run configured otherwise is refused, not continued (a later override wins).
    with pytest.raises(SystemExit, match="configured otherwise"):
        variants.main([*argv, "--out", str(tmp_path / "x.json"), "--checkpoint_dir", kept, "--resume",
                       "--override", *tiny, "weight_decay=0.123"])
    with pytest.raises(SystemExit, match="--minutes needs"):
        variants.main([*argv, "--minutes", "5"])


@pytest.mark.slow
def test_a_variants_run_keeps_its_final_network_as_a_model_an_arena_can_load(tmp_path, tiny_overrides):
    variants = import_module("lab.connect_four.variants_connect_four")
    # 8 simulations a move: at the tiny 4, n_scl 5 never freezes a node and the script refuses the run as inert.
    overrides = {**tiny_overrides, "num_simulations": 8}
    tiny = [f"{k}={v}" for k, v in overrides.items() if k not in ("num_steps", "eval_every")]
    out, models = tmp_path / "v.json", tmp_path / "models"
    assert variants.main(["--variants", "contempt_5", "--seeds", "1", "--num_steps", "2", "--evals", "1",
                          "--sims", "2", "--sets", "begin_easy", "--limit", "2", "--mcts_games", "0",
                          "--probe_games", "0", "--override", *tiny, "--model_dir", str(models),
                          "--out", str(out), "--plot", ""]) == 0
    (run,) = json.loads(out.read_text())["runs"]
    assert run["model"] == str(models / "contempt_5_seed0")
    assert run["machine"]["cpu_model"] and "cpu_simd" in run["machine"]  # where it ran: a rerun elsewhere may differ
    config = load_config(run["model"])
    assert config.n_scl == 5 and config.num_channels == tiny_overrides["num_channels"]
    game = make_game("connect_four")
    untrained = init_params(make_network(config, game), game, jax.random.key(0))
    trained = load_params(run["model"], untrained)  # refuses parameters of another shape
    assert jax.tree_util.tree_structure(trained) == jax.tree_util.tree_structure(untrained)


def pgn_game(game_id: str, white: str, black: str, moves: str) -> str:
    """A chess game as the arena records it in its games.pgn (the result as the board has it)."""
    board = chess.Board()
    for move in moves.split():
        board.push_uci(move)
    return chess_pgn(moves.split(), white=white, black=black, result=board.result(claim_draw=True), game_id=game_id)


def test_chess_endings_counts_how_each_pairings_games_ended_from_the_first_agents_side(tmp_path):
    endings = import_module("lab.chess_probes.chess_endings")
    arena = tmp_path / "arena"
    arena.mkdir()
    (arena / "results.json").write_text(json.dumps({"pairings": [{"name_a": "model:64", "name_b": "random"},
                                                                 {"name_a": "model:64", "name_b": "material"}]}))
    write_collection(arena / "games.pgn", [
        pgn_game("00_model_64_vs_random_0000", "random", "model:64", "f2f3 e7e5 g2g4 d8h4"),  # the model mates
        # The model (White) takes the queen, then both knights shuffle until the position has come three times.
        pgn_game("00_model_64_vs_random_0001", "model:64", "random", "e2e4 e7e5 d1h5 d8g5 h5g5 "
                 + "b8c6 g1f3 c6b8 f3g1 " * 2),
        pgn_game("01_model_64_vs_material_0000", "material", "model:64", "f2f3 e7e5 g2g4 d8h4")])
    assert endings.main([str(arena)]) == 0
    first, second = json.loads((arena / "endings.json").read_text())["pairings"]
    assert first["endings"] == {"checkmate win": 1, "threefold_repetition draw": 1}
    assert first["material_lead_of_a_at_the_end"] == {"median": 4.5, "min": 0, "max": 9}
    assert first["draws_with_a_ahead_by_9_or_more"] == 1
    assert (second["name_b"], second["games"], second["endings"]) == ("material", 1, {"checkmate win": 1})



@pytest.mark.slow
def test_chess_tactics_finds_the_solving_moves_and_counts_the_mates_a_model_missed(models, tmp_path):
    tactics = import_module("lab.chess_probes.chess_tactics")
    assert tactics.solving_moves(chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")) == ["a1a8"]  # mate first
    free_queen = chess.Board("rnbqkbnr/pppp1ppp/4p3/3Q4/4P3/8/PPPP1PPP/RNB1KBNR b KQkq - 1 2")
    assert tactics.solving_moves(free_queen) == ["e6d5"]  # the most valuable capture
    assert tactics.solving_moves(chess.Board()) == []
    names = [name for name, _ in tactics.read_positions(tactics.POSITIONS)]
    assert len(names) == 12 and names[0] == "a free queen, White to move"
    # An arena game in which the model (Black) mated in one at its first chance, and one in which it did not.
    arena = tmp_path / "arena"
    arena.mkdir()
    (arena / "results.json").write_text(json.dumps({"pairings": [{"name_a": "model:64", "name_b": "random"}]}))
    write_collection(arena / "games.pgn", [
        pgn_game(f"00_model_64_vs_random_{number:04d}", "random", "model:64", moves)
        for number, moves in ((0, "f2f3 e7e5 g2g4 d8h4"), (1, "f2f3 e7e5 g2g4 a7a6 a2a3 d8h4"))])
    assert tactics.mates_missed(arena) == {"games": 2, "moves_with_a_mate_in_one": 3, "mates_in_one_played": 2}
    with pytest.raises(SystemExit):  # argparse's one-line error: not a model directory
        tactics.main([str(tmp_path / "no_model"), "--out", str(tmp_path / "never.json")])
    assert not (tmp_path / "never.json").exists()
    out = tmp_path / "tactics.json"
    assert tactics.main([str(models["chess"]), "--visits", "4", "--games", str(arena), "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())["models"]
    assert row["count"] == 12 and len(row["positions"]) == 12 and row["against_random"]["games"] == 2
    assert all(1 <= r["solving_rank"] <= r["legal_moves"] and 0 <= r["solving_prior"] <= 1 for r in row["positions"])


def test_time_tests_reads_pytests_summary_line_and_refuses_output_without_one():
    time_tests = import_module("scripts.time_tests")
    output = "....F\n=== short test summary info ===\nFAILED tests/x.py::t\n==== 1 failed, 4 passed in 2.50s ====\n"
    assert time_tests.summary_line(output) == "1 failed, 4 passed in 2.50s"
    assert time_tests.summary_line("668 passed in 209.52s (0:03:29)") == "668 passed in 209.52s (0:03:29)"
    with pytest.raises(SystemExit, match="no summary line"):
        time_tests.summary_line("ERROR: usage: pytest [options]")


def test_time_tests_sums_the_slowest_tests_by_module_largest_first():
    time_tests = import_module("scripts.time_tests")
    output = ("12.50s call     tests/a.py::test_x\n3.00s setup    tests/b.py::test_y\n"
              "2.25s call     tests/a.py::test_z[p]\n")
    rows = time_tests.slowest(output)
    assert [r["test"] for r in rows] == ["tests/a.py::test_x", "tests/b.py::test_y", "tests/a.py::test_z[p]"]
    assert time_tests.by_module(rows) == [{"module": "tests/a.py", "seconds": 14.8},
                                          {"module": "tests/b.py", "seconds": 3.0}]


def test_time_tests_keeps_pytests_slowest_tests():
    time_tests = import_module("scripts.time_tests")
    output = ("==== slowest 25 durations ====\n200.41s call     tests/test_runbook.py::test_tiny\n"
              "9.29s teardown tests/a.py::test_b[x-1]\n(10 durations < 0.005s hidden.)\n")
    assert time_tests.slowest(output) == [
        {"seconds": 200.41, "phase": "call", "test": "tests/test_runbook.py::test_tiny"},
        {"seconds": 9.29, "phase": "teardown", "test": "tests/a.py::test_b[x-1]"}]


@pytest.mark.slow
def test_sgd_scan_bench_times_each_form_and_records_its_command(tmp_path):
    out = tmp_path / "sgd_scan.json"
    assert import_module("scripts.bench_sgd_scan").main(["--repeats", "2", "--rounds", "1", "--batch_size", "4",
                                                "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m scripts.bench_sgd_scan --repeats 2") and data["batch"] == 4
    for name in ("forward", "gradient"):
        assert set(data[name]["seconds"]) == {"separate_calls", "rolled_scan", "unrolled_scan"}
        assert all(s > 0 for s in data[name]["seconds"].values()) and data[name]["rolled_over_separate"] > 0


def test_the_xla_flags_bench_gives_each_sets_medians_as_ratios_to_the_first_set():
    bench = import_module("scripts.bench_xla_flags")
    figures = lambda compile_s, step_s: dict(xla_compile_s=compile_s, trace_s=1.0, lower_s=1.0,  # noqa: E731
                                             first_step_s=compile_s + 2, step_s=step_s)
    runs = [dict(flags="", figures=figures(10.0, 0.1)), dict(flags="-f", figures=figures(4.0, 0.1)),
            dict(flags="", figures=figures(8.0, 0.3)), dict(flags="-f", figures=figures(6.0, 0.2)),
            dict(flags="", figures=figures(12.0, 0.2))]
    base, other = bench.summarise(["", "-f"], runs)
    assert base["processes"] == 3 and base["median"]["xla_compile_s"] == 10.0 and base["median"]["step_s"] == 0.2
    assert other["median"]["xla_compile_s"] == 5.0 and other["ratio_to_first"]["xla_compile_s"] == 0.5
    assert other["ratio_to_first"]["step_s"] == 0.75 and base["ratio_to_first"]["step_s"] == 1.0
    with pytest.raises(SystemExit, match="connect_four has no preset 'ful'"):
        bench.main(["--preset", "ful", "--out", "x.json", "--", ""])


@pytest.mark.slow
def test_the_xla_flags_bench_builds_the_tiny_loop_in_a_process_of_each_flag_set(tmp_path):
    out = tmp_path / "flags.json"
    bench = import_module("scripts.bench_xla_flags")
    assert bench.main(["--tiny", "--steps", "1", "--repeats", "1", "--out", str(out), "--",
                       "--xla_backend_optimization_level=0"]) == 0
    data = json.loads(out.read_text())
    (run,) = data["runs"]
    assert run["flags"] == "--xla_backend_optimization_level=0" and run["figures"]["xla_compile_s"] > 0
    assert run["figures"]["first_step_s"] > run["figures"]["step_s"] > 0
    assert data["flag_sets"][0]["ratio_to_first"]["xla_compile_s"] == 1.0 and data["overrides"]["num_envs"] == 8
    assert data["command"].startswith("python -m scripts.bench_xla_flags --tiny")


@pytest.mark.slow
def test_go_rules_bench_times_both_rule_sets_and_records_its_command(tmp_path):
    out = tmp_path / "go_rules.json"
    bench = import_module("scripts.bench_go_rules")
    assert bench.main(["--sizes", "7", "--batches", "4", "--plies", "2", "--rounds", "1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m scripts.bench_go_rules --sizes 7")
    (row,) = data["rows"]
    assert set(row["median_seconds"]) == {"pgx_env", "azjax_env", "game_step_on_pgx", "game_step_on_azjax"}
    assert row["env_speedup"] > 0 and row["game_step_speedup"] > 0


def test_the_material_probe_pairs_a_position_a_queen_up_with_it_a_queen_down(tmp_path):
    probe = import_module("lab.chess_probes.material_probe")
    games = tmp_path / "games.pgn"
    write_collection(games, [
        pgn_game("00_a_vs_b_0000", "a", "b", "e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 d2d3 f8c5 b1c3 d7d6"),
        pgn_game("00_a_vs_b_0001", "b", "a", "e2e4 e7e5")])  # too short: no position in plies 4-9
    ((up, down),) = probe.pairs_from_games(read_collection(games), 4, 9)
    up, down = chess.Board(up), chess.Board(down)
    assert up.turn == down.turn == chess.WHITE and up.fullmove_number == 3  # ply 4, the first in range
    assert len(up.pieces(chess.QUEEN, chess.WHITE)) == 1 and not up.pieces(chess.QUEEN, chess.BLACK)
    assert len(down.pieces(chess.QUEEN, chess.BLACK)) == 1 and not down.pieces(chess.QUEEN, chess.WHITE)
    (tmp_path / "odd.txt").write_text(f"# a comment\n{up.fen()}\n")
    with pytest.raises(SystemExit, match="odd number"):
        probe.read_pairs(tmp_path / "odd.txt")


def test_the_mate_probe_finds_each_position_with_a_mate_in_one_and_its_mating_moves(tmp_path):
    probe = import_module("lab.chess_probes.mate_probe")
    fools_mate = "f2f3 e7e5 g2g4 d8h4"  # Black mates in one before its second move
    for arena in ("a", "b"):  # the same position in two collections is probed once
        write_collection(tmp_path / arena / "games.pgn", [pgn_game("00_x_vs_y_0000", "x", "y", fools_mate)])
    collections = [tmp_path / "a" / "games.pgn", tmp_path / "b" / "games.pgn"]
    positions = probe.mate_in_one_positions(collections)
    assert positions == [("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2", ["d8h4"])]
    out = tmp_path / "positions.txt"
    assert probe.main(["--games", *map(str, collections), "--write_positions", str(out)]) == 0
    assert probe.read_positions(out) == positions
    assert f"# from 2 games of {collections[0]} {collections[1]}" in out.read_text()


def test_pack_games_packs_an_arenas_single_records_into_the_collection_the_arena_writes_now(tmp_path):
    pack = import_module("scripts.pack_games")
    plays = {"go_9x9": (["D4", "E5", "pass", "pass"], "B+3.5", ".sgf"), "chess": (["e2e4", "e7e5"], "*", ".pgn"),
             "connect_four": (["4", "4", "3"], "*", ".txt")}
    expected = {}
    for name, (moves, result, suffix) in plays.items():
        (tmp_path / name / "games").mkdir(parents=True)
        expected[name] = []
        for k in range(2):  # as the arena wrote its games before: one file a game, its name the game's id
            game_id = f"00_a_vs_b_{k:04d}"
            first, second = ("a", "b") if k == 0 else ("b", "a")
            single = game_record(make_game(name), moves, first=first, second=second, result=result, komi=7.5)
            path = tmp_path / name / "games" / f"{game_id}{suffix}"
            path.write_bytes(single if isinstance(single, bytes) else single.encode())
            expected[name].append(game_record(make_game(name), moves, first=first, second=second, result=result,
                                              komi=7.5, game_id=game_id))
    assert pack.main([str(tmp_path)]) == 0
    for name, (_, _, suffix) in plays.items():
        assert [g["record"] for g in read_collection(tmp_path / name / f"games{suffix}")] == expected[name]
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == [f"games{suffix}"]  # games/ is gone
    mixed = tmp_path / "mixed" / "games"
    mixed.mkdir(parents=True)
    (mixed / "00_a_vs_b_0000.txt").write_text(expected["connect_four"][0])
    (mixed / "notes.md").write_text("the user's own file\n")
    with pytest.raises(SystemExit, match="files that are not arena game records: \\['notes.md'\\]"):
        pack.main([str(tmp_path / "mixed")])
    assert sorted(p.name for p in mixed.iterdir()) == ["00_a_vs_b_0000.txt", "notes.md"]  # nothing was packed


@pytest.mark.slow
def test_the_mate_probe_searches_each_position_through_analyze_and_names_one_it_cannot_set_up(tmp_path, models):
    probe = import_module("lab.chess_probes.mate_probe")
    fools_mate = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"
    (tmp_path / "mates.txt").write_text(f"# a comment\n{fools_mate} ; d8h4\n{chess.STARTING_FEN} ; e2e4\n")
    out = tmp_path / "probe.json"
    assert probe.main(["--checkpoint", str(models["chess"]), "--visits", "4", "--considered", "64",
                       "--positions", str(tmp_path / "mates.txt"), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["positions"] == 2 and result["considered"] == 64
    assert 0 <= result["mates_played"] <= result["mates_visited"] <= 1
    (tmp_path / "bad.txt").write_text("not a position ; e2e4\n")
    with pytest.raises(SystemExit, match="could not be set up"):
        probe.main(["--checkpoint", str(models["chess"]), "--visits", "4", "--positions", str(tmp_path / "bad.txt"),
                    "--out", str(tmp_path / "bad.json")])


def test_the_sweep_bench_refuses_more_runs_alone_than_seeds_in_one_line(capsys):
    with pytest.raises(SystemExit):
        import_module("scripts.bench_sweep").main(["--seeds", "2", "--sequential_runs", "3"])
    assert "--sequential_runs must be in 0..--seeds (2), got 3" in capsys.readouterr().err


def test_the_9x9_loss_study_finds_where_a_game_turned_and_whose_stones_the_model_played():
    losses = import_module("lab.go_9x9.losses")
    # turned: from the first winrate after which none reaches the threshold again
    assert losses.lost_from([0.6, 0.2, 0.4, 0.25, 0.1], 0.3) == 3
    assert losses.lost_from([0.6, 0.2, 0.1], 0.3) == 1 and losses.lost_from([0.2, 0.5], 0.3) is None
    game = {"black": "go_9x9_sai:512", "white": "gnugo-l10"}
    assert losses.model_colour(game, "go_9x9_sai") == "b" and losses.model_colour(game, "katago") is None
    assert losses.model_won("B+2.5", "b") and not losses.model_won("W+88.5", "b") and losses.model_won("W+R", "w")
