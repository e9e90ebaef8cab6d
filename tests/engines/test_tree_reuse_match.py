"""lab/engines/tree_reuse_match.py: a two-game match of an untrained 1x8 7x7 Go network with a Gumbel search against
itself, tree reuse on against off, at 32 visits at most and a generous time per move, games cut at 24 plies."""

from __future__ import annotations

import json
from importlib import import_module

import pytest
from conftest import random_params

from azjax.checkpoint import save_config, save_params
from azjax.config import Config
from azjax.games import make_game

match = import_module("lab.engines.tree_reuse_match")

BUDGET = 2.0  # seconds per move; the tiny network searches 32 visits in well under 0.1 s
MAX_VISITS = 32


@pytest.fixture(scope="module")
def gumbel_7x7(tmp_path_factory):
    config = Config(game="go_7x7", num_blocks=1, num_channels=8, eval_simulations=4, search="gumbel")
    path = tmp_path_factory.mktemp("gumbel_7x7")
    save_config(path, config)
    save_params(path, random_params(config, make_game("go_7x7")))
    return path


@pytest.mark.slow
def test_a_two_game_match_scores_reuse_on_against_off_and_keeps_both_sides_within_the_time_per_move(gumbel_7x7,
                                                                                                     tmp_path):
    out = tmp_path / "tree_reuse.json"
    assert match.main(["--checkpoint", str(gumbel_7x7), "--games", "2", "--seconds_per_move", str(BUDGET),
                       "--max_visits", str(MAX_VISITS), "--start_visits", str(MAX_VISITS), "--calibration_plies", "8",
                       "--komi", "9.5", "--max_plies", "24", "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["command"].startswith("python -m lab.engines.tree_reuse_match --checkpoint")
    assert (d["game"], d["search"], d["komi"], d["seconds_per_move"], d["opening_plies"]) == \
        ("go_7x7", "gumbel", 9.5, BUDGET, 2)
    assert d["games"] == 2 and d["wins"] + d["draws"] + d["losses"] == 2 and d["draws"] == 0  # half-integer komi
    assert d["score"] == d["wins"] / 2
    low, high = d["score_interval"]
    assert 0 <= low <= d["score"] <= high <= 1
    low, high = d["elo_diff_interval"]
    assert low <= d["elo_diff"] <= high
    games = d["games_played"]
    assert [g["reuse_on_first"] for g in games] == [True, False]  # colours alternate
    assert games[0]["moves"][:2] == games[1]["moves"][:2]  # a pair shares its random opening
    assert all(0 < g["plies"] <= 24 and g["reason"].startswith(("B+", "B-", "superko")) for g in games)
    assert d["games_cut_short"] == sum("cap" in g["reason"] for g in games)
    # Calibration: 32 visits take far less than the budget, so each side plays at the cap after one round.
    assert d["calibration"]["visits"] == {"reuse_on": MAX_VISITS, "reuse_off": MAX_VISITS}
    assert len(d["calibration"]["rounds"]) == 1 and d["calibration"]["rounds"][0]["moves"]["reuse_on"] >= 4
    plies_moved = sum(g["plies"] - 2 for g in games)  # the engines' moves: all but the openings
    assert d["reuse_on"]["moves"] + d["reuse_off"]["moves"] == plies_moved
    for side in ("reuse_on", "reuse_off"):
        s = d[side]
        assert s["moves"] >= 2  # both sides moved
        assert s["mean_visits"] == MAX_VISITS and s["visits_histogram"] == {str(MAX_VISITS): s["moves"]}
        assert 0 < s["median_seconds"] <= s["max_seconds"] <= BUDGET and s["moves_over_budget"] == 0
        assert 0 < s["mean_seconds"] <= s["max_seconds"] and s["compile_seconds"] == 0  # compiled before the games
        assert s["mean_search_seconds"] <= s["mean_seconds"]
    assert d["reuse_on"]["reuses_trees"] and not d["reuse_off"]["reuses_trees"]
    assert "mean_kept_visits" not in d["reuse_off"]
    on = d["reuse_on"]
    assert 0 <= on["moves_with_kept_tree"] <= on["moves"]
    assert (on["mean_kept_nodes"] > 0) == (on["moves_with_kept_tree"] > 0)
    assert 0 <= on["mean_kept_visits"] <= on["mean_kept_nodes"]  # a kept root's children's visits: fewer than its nodes
    # Gumbel: every move's root runs its planned visits afresh, with or without reuse.
    assert on["mean_root_visits"] == on["mean_visits"] and d["reuse_off"]["mean_root_visits"] == \
        d["reuse_off"]["mean_visits"]
