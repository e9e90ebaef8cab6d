"""Search-contempt measures: self-play statistics, the material evaluator, the sweep and odds scripts."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from outside_programs import outside_program

from azjax.games import GameState, chess_state_from_fen
from azjax.play.material import adjudicate_by_material, capture_values, material_diff, material_evaluator
from azjax.play.selfplay_stats import (
    decisive_ratio,
    first_player_outcomes,
    json_float,
    repeat_fraction,
    selfplay_stats,
    wdl,
)

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- statistics


def test_wdl_and_decisive_ratio():
    assert wdl(np.array([1, 0, -1, 1, 0.0, -0.5])) == (2, 2, 2)
    assert decisive_ratio(2, 1, 1) == 3.0
    assert decisive_ratio(0, 4, 0) == 0.0
    assert decisive_ratio(3, 0, 1) == math.inf
    assert math.isnan(decisive_ratio(0, 0, 0))
    assert json_float(math.inf) == "inf" and json_float(math.nan) == "nan" and json_float(0.5) == 0.5


def test_repeat_fraction_hand_made():
    moves = np.array(
        [
            [0, 1, 2, -1],
            [0, 1, 3, -1],
            [0, 1, 2, -1],  # repeats game 0 entirely
            [4, 1, 2, 5],
        ]
    )
    np.testing.assert_allclose(repeat_fraction(moves), [0.5, 0.5, 0.25, 0.25])
    # Beyond the recorded columns the padding is -1 for everyone: nothing changes.
    np.testing.assert_allclose(repeat_fraction(moves, max_prefix=6), [0.5, 0.5, 0.25, 0.25, 0.25, 0.25])
    np.testing.assert_allclose(repeat_fraction(moves, max_prefix=2), [0.5, 0.5])
    # N identical games: (N - 1) / N; all distinct: 0. Only EARLIER games count (order matters not the set).
    same = np.tile(np.array([[3, 4, 5]]), (3, 1))
    np.testing.assert_allclose(repeat_fraction(same), [2 / 3] * 3)
    np.testing.assert_allclose(repeat_fraction(np.array([[0, 1], [1, 0], [2, 2]])), [0.0, 0.0])
    # A game that ended early repeats a longer one only up to its own length.
    np.testing.assert_allclose(repeat_fraction(np.array([[0, 1, 2], [0, 1, -1]])), [0.5, 0.5, 0.0])


def test_selfplay_stats_first_mover_view():
    records = SimpleNamespace(
        outcome=np.array([1.0, -1.0, 0.0, 1.0]),  # agent A's view
        a_first=np.array([True, True, False, False]),
        moves=np.array([[0, 1], [0, 2], [0, 1], [5, 6]]),
        length=np.array([2, 2, 2, 2]),
        terminated=np.array([True, True, False, True]),
    )
    np.testing.assert_array_equal(first_player_outcomes(records), [1.0, -1.0, 0.0, -1.0])
    stats = selfplay_stats(records)
    assert (stats.wins, stats.draws, stats.losses, stats.unfinished) == (1, 1, 2, 1)
    assert stats.decisive_ratio == 3.0
    np.testing.assert_allclose(stats.repeat_fraction, [0.5, 0.25])
    d = stats.to_dict()
    assert d["games"] == 4 and d["decisive_ratio"] == 3.0 and d["repeat_fraction"] == [0.5, 0.25]
    json.dumps(d)


def _uniform_evaluator(params, states):
    del params
    legal = states.legal_action_mask
    return jnp.zeros(legal.shape, jnp.float32), jnp.zeros(legal.shape[:1], jnp.float32)


@pytest.mark.slow
def test_temperature_agent_matches_search():
    """tau = 0 plays the search's most-visited move; n_scl from the params acts like the static n_scl."""
    from azjax.games import make_game
    from azjax.play.selfplay_stats import selfplay_params, temperature_agent
    from azjax.search import SearchSpec, root_visit_counts, run_search

    game = make_game("connect_four")
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 4))
    spec = SearchSpec(kind="puct", num_simulations=24, dirichlet_fraction=0.0)
    key = jax.random.key(3)
    search_key, _ = jax.random.split(key)
    for n_scl in (0, 2):
        agent = temperature_agent(game, _uniform_evaluator, dataclasses.replace(spec, n_scl=n_scl or 7))
        if n_scl == 0:
            agent = temperature_agent(game, _uniform_evaluator, spec)
        else:
            agent = agent.with_params(selfplay_params(None, n_scl, 0.0))
        actions = jax.jit(agent.act)(agent.params, key, states)
        out = run_search(dataclasses.replace(spec, n_scl=n_scl), game, _uniform_evaluator, None, search_key, states)
        visits = np.asarray(root_visit_counts(out))
        np.testing.assert_array_equal(np.asarray(actions), visits.argmax(axis=-1))
    # Contempt agents with different n_scl share one compiled act.
    a = temperature_agent(game, _uniform_evaluator, dataclasses.replace(spec, n_scl=2))
    b = temperature_agent(game, _uniform_evaluator, dataclasses.replace(spec, n_scl=5), tau=1.0)
    assert a.act is b.act and int(b.params.n_scl) == 5 and float(b.params.tau) == 1.0


# ---------------------------------------------------------------- material evaluator


def _states(fens: list[str]) -> GameState:
    envs = [chess_state_from_fen(f) for f in fens]
    env = jax.tree.map(lambda *xs: jnp.stack(xs), *envs)
    return GameState(env=env, komi=jnp.zeros(len(fens), jnp.float32))


START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
NO_WHITE_QUEEN_W = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR w KQkq - 0 1"
NO_WHITE_QUEEN_B = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR b KQkq - 0 1"
SYMMETRIC_B = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/2N5/PPPP1PPP/R1BQKBNR b KQkq - 2 2"


@pytest.fixture(scope="module")
def material_states():
    # (pgx builds a state from a FEN eagerly, ~2 s each: keep the list short.)
    return _states([START, NO_WHITE_QUEEN_W, NO_WHITE_QUEEN_B, SYMMETRIC_B])


def test_material_signs(material_states):
    evaluate = jax.jit(material_evaluator())
    logits, value = evaluate(None, material_states)
    value = np.asarray(value)
    np.testing.assert_allclose(value[[0, 3]], 0.0, atol=1e-6)  # symmetric, either side to move
    # White lacks its queen: White to move sees -tanh(0.2 * 9), Black to move sees +tanh(0.2 * 9).
    queen = math.tanh(0.2 * 9)
    np.testing.assert_allclose(value[1:3], [-queen, queen], rtol=1e-5)
    assert value[2] > 0.9 and value[1] < -0.9
    legal = np.asarray(material_states.legal_action_mask)
    lg = np.asarray(logits)
    assert (lg[legal] == 0).all() and (lg[~legal] < -1e30).all()  # uniform prior over legal moves
    np.testing.assert_array_equal(np.asarray(material_diff(material_states.env._x.board))[:3], [0, -9, 9])


def test_material_mobility_symmetric(material_states):
    _, value = jax.jit(material_evaluator(mobility=0.05))(None, material_states)
    np.testing.assert_allclose(np.asarray(value)[[0, 3]], 0.0, atol=1e-6)  # 20 moves each at the start


def test_capture_prior_prefers_captures():
    # The White pawn on e4 can take a pawn (d5) or a knight (f5), or push (e5).
    fen = "rnbqkb1r/ppp1pppp/8/3p1n2/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 3"
    states = _states([fen])
    logits, _ = material_evaluator(capture_prior=1.0)(None, states)
    logits = np.asarray(logits)[0]
    legal = np.flatnonzero(np.asarray(states.legal_action_mask)[0])
    from azjax.games import make_game

    game = make_game("chess")
    state0 = jax.tree.map(lambda x: x[0], states)
    by_move = {game.action_to_str(state0, a): logits[a] for a in legal}
    assert by_move["e4f5"] == 3.0 and by_move["e4d5"] == 1.0 and by_move["e4e5"] == 0.0
    assert max(by_move, key=by_move.get) == "e4f5"
    cv = np.asarray(capture_values(states.env._x.board, states.env._x.en_passant))
    assert cv.shape == (1, 4672)


def test_adjudicate_by_material(material_states):
    s = jax.tree.map(lambda x: x[1:3], material_states)  # White a queen down; White / Black to move
    length = np.array([10, 11])  # even: the first mover (White) is to move; odd: Black is
    judged = adjudicate_by_material(s, length, np.zeros(2, bool), np.zeros(2), threshold=3)
    np.testing.assert_array_equal(judged, [-1, -1])
    # Finished games keep their result.
    np.testing.assert_array_equal(adjudicate_by_material(s, length, np.array([True, False]), np.array([1.0, 0]), 3),
                                  [1, -1])
    assert (adjudicate_by_material(s, length, np.zeros(2, bool), np.zeros(2), threshold=10) == 0).all()
    # The same boards (from the mover's side) with the other side to move: now Black lacks the queen.
    np.testing.assert_array_equal(adjudicate_by_material(s, np.array([11, 10]), np.zeros(2, bool), np.zeros(2), 3),
                                  [1, 1])


# ---------------------------------------------------------------- scripts end to end


@pytest.mark.slow
def test_contempt_sweep_checkpoint_cli(c4_quick_untrained, tmp_path):
    out, png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    cmd = [sys.executable, "-m", "lab.contempt.contempt_sweep", "--checkpoint", str(c4_quick_untrained),
           "--games", "4", "--sims", "8", "--n_scl", "1", "off", "--temps", "0", "1", "--max_prefix", "10",
           "--out", str(out), "--plot", str(png)]  # fmt: skip
    env = dict(os.environ, JAX_PLATFORMS="cpu", AZJAX_CACHE_DIR=jax.config.jax_compilation_cache_dir or "off")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert {"command", "args", "setup", "search", "settings", "notes", "max_moves"} <= set(summary)
    assert "partial" not in summary
    rows = summary["settings"]
    assert [(r["n_scl"], r["tau"]) for r in rows] == [(1, 0.0), ("off", 0.0), (1, 1.0), ("off", 1.0)]
    for r in rows:
        assert {"n_scl", "tau", "sims", "games", "wins", "draws", "losses", "decisive_ratio", "repeat_fraction",
                "unfinished", "mean_length"} <= set(r)
        assert r["games"] == 4 and r["wins"] + r["draws"] + r["losses"] == 4 and len(r["repeat_fraction"]) == 10
    assert png.stat().st_size > 1000


@pytest.mark.slow
def test_contempt_sweep_chess_material(tmp_path):
    sweep = import_module("lab.contempt.contempt_sweep")
    out = tmp_path / "sweep.json"
    argv = ["--game", "chess", "--evaluator", "material", "--games", "2", "--sims", "4", "--max_moves", "6",
            "--settings", "2:0", "2:1", "--adjudicate", "3", "--capture_prior", "1", "--out", str(out),
            "--plot", str(tmp_path / "s.png")]  # fmt: skip
    assert sweep.main(argv) == 0
    summary = json.loads(out.read_text())
    assert summary["max_moves"] == 6 and summary["setup"]["evaluator"] == "material"
    rows = summary["settings"]
    assert [(r["n_scl"], r["tau"]) for r in rows] == [(2, 0.0), (2, 1.0)]
    for r in rows:
        assert r["unfinished"] == 2 and r["draws"] == 2  # 6 plies: nobody is mated
        assert {"wins", "draws", "losses", "decisive_ratio", "threshold_pawns"} <= set(r["adjudicated"])


@pytest.mark.slow
def test_odds_match_search_opponent(tmp_path):
    odds = import_module("lab.contempt.odds_match")
    out = tmp_path / "odds.json"
    argv = ["--start", "knight_odds", "--budgets", "4", "--methods", "puct", "--games", "2", "--opponent", "search:2",
            "--max_moves", "6",
            "--adjudicate", "2", "--out", str(out)]  # fmt: skip
    assert odds.main(argv) == 0
    summary = json.loads(out.read_text())
    assert {"command", "start_fen", "giver", "opponent", "results", "notes"} <= set(summary)
    assert summary["start_fen"].startswith("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/R1BQKBNR w")
    rows = summary["results"]
    assert [(r["method"], r["budget"], r["n_scl"]) for r in rows] == [("puct", 4, None)]
    for r in rows:
        assert {"games", "wins", "draws", "losses", "score", "score_low", "score_high", "unfinished"} <= set(r)
        assert r["games"] == 2 and r["score_low"] <= r["score"] <= r["score_high"]
        assert r["illegal"] == 0
        assert r["unfinished"] == 2  # 6 plies: no mate
        assert {"wins", "draws", "losses", "score", "threshold_pawns"} <= set(r["adjudicated"])


@pytest.mark.slow
def test_odds_match_stockfish(tmp_path):
    stockfish = outside_program("stockfish")
    odds = import_module("lab.contempt.odds_match")
    with odds.UCIClient([stockfish], options={"Skill Level": 0}) as engine:
        move = odds.engine_move(engine, START, 5)
        assert move is not None and len(move) in (4, 5)
        assert odds.engine_move(engine, "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", 5) is None  # stalemate: no move
    assert engine.process.proc.poll() is not None  # closed
    out = tmp_path / "odds_sf.json"
    argv = ["--start", "queen_odds", "--budgets", "4", "--methods", "contempt", "--n_scl", "2", "--games", "2",
            "--opponent", "stockfish", "--stockfish", stockfish,
            "--skill", "0", "--movetime_ms", "5", "--max_moves", "4", "--out", str(out)]  # fmt: skip
    assert odds.main(argv) == 0
    summary = json.loads(out.read_text())
    assert summary["opponent"]["kind"] == "stockfish" and summary["results"][0]["games"] == 2
    assert summary["results"][0]["n_scl"] == 2
    assert summary["results"][0]["illegal"] == 0
