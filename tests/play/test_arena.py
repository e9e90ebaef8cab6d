"""Agents, arena and Elo: tiny batches on Connect Four."""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.build import init_params, make_network
from azjax.config import Config
from azjax.engines.engine import Engine
from azjax.games import GameState, chess_state_from_fen, make_game
from azjax.play import arena
from azjax.play.agents import (
    Agent,
    material_agent,
    network_agent,
    policy_agent,
    random_agent,
    random_playout,
    rollout_mcts_agent,
    search_agent,
)
from azjax.play.arena import (
    MatchResult,
    elo_from_score,
    fit_elo,
    match,
    play_games,
    score_from_elo,
    wilson_interval,
)
from azjax.play.specs import parse_agent, require_jax_agent
from azjax.search import SearchSpec, network_evaluator


@pytest.fixture(scope="module")
def c4():
    return make_game("connect_four")


@functools.cache
def _jit_step(game):
    return jax.jit(game.step)


def _position(game, moves: list[int]) -> GameState:
    """The position after `moves` (one compiled step: eager pgx steps take most of a second each)."""
    state = game.init(jax.random.key(0))
    for m in moves:
        assert bool(state.legal_action_mask[m]) and not bool(state.terminated)
        state = _jit_step(game)(state, jnp.int32(m))
    return state


def _stack(states: list[GameState]) -> GameState:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def _lowest(params, key, states):
    return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)


def _highest(params, key, states):
    a = states.legal_action_mask.shape[-1]
    return (a - 1 - jnp.argmax(states.legal_action_mask[:, ::-1], axis=-1)).astype(jnp.int32)


# ---------------------------------------------------------------- arena


def test_colours_alternate_with_deterministic_agents(c4):
    # A always plays the leftmost column, B the rightmost: whoever starts wins on ply 7.
    a, b = Agent("left", _lowest), Agent("right", _highest)
    r = jax.tree.map(np.asarray, play_games(c4, a, b, jax.random.key(0), 4))
    np.testing.assert_array_equal(r.a_first, [True, True, False, False])
    np.testing.assert_array_equal(r.outcome, [1, 1, -1, -1])
    np.testing.assert_array_equal(r.length, [7, 7, 7, 7])
    np.testing.assert_array_equal(r.moves[0, :8], [0, 6, 0, 6, 0, 6, 0, -1])
    np.testing.assert_array_equal(r.moves[2, :8], [6, 0, 6, 0, 6, 0, 6, -1])
    assert (r.moves[:, 7:] == -1).all()
    assert r.terminated.all() and not r.illegal.any()


def test_random_vs_random_is_plausible(c4):
    rnd = random_agent(c4)
    res = match(c4, rnd, rnd, 200, jax.random.key(1), batch_size=100)
    r = res.records
    assert res.games == 200 and res.illegal == 0 and res.unfinished == 0
    assert 0.38 < res.score < 0.62
    assert 7 <= r.length.min() and r.length.max() <= 42 and 15 < res.mean_length < 30
    # Per half, count wins of the side that moved first (A in the first half, B in the second).
    first_wins = [(r.outcome[r.a_first] > 0).mean(), (r.outcome[~r.a_first] < 0).mean()]
    assert all(0.35 < w < 0.8 for w in first_wins), first_wins
    assert r.a_first.sum() == 100
    # Moves are -1 exactly after each game's end.
    ply = np.arange(c4.max_moves)
    np.testing.assert_array_equal(r.moves >= 0, ply[None, :] < r.length[:, None])


def test_match_partial_batch_keeps_colours_balanced(c4):
    rnd = random_agent(c4)
    res = match(c4, rnd, rnd, 6, jax.random.key(2), batch_size=4)
    assert res.games == 6 and res.records.a_first.sum() == 3
    d = res.to_dict()
    assert d["games"] == 6 and d["score_low"] <= d["score"] <= d["score_high"]


def test_play_games_plays_at_the_komi_it_is_given_and_compiles_once_for_every_komi(c4):
    go = make_game("go_7x7")
    rnd = random_agent(go)
    compiled = arena.play_jit._cache_size()
    # Black's area lead on a 7x7 board is within [-49, 49]: komi -49.5 hands Black every game, +49.5 White.
    for komi, black in ((-49.5, 1.0), (49.5, -1.0)):
        r = play_games(go, rnd, rnd, jax.random.key(3), 4, komi=komi)
        black_result = np.where(r.a_first, r.outcome, -r.outcome)  # A moves first (Black) in the first half
        np.testing.assert_array_equal(black_result, black)
    assert arena.play_jit._cache_size() == compiled + 1
    with pytest.raises(ValueError, match="komi applies to Go only"):
        play_games(c4, random_agent(c4), random_agent(c4), jax.random.key(0), 2, komi=7.5)


def test_random_playout_outcomes(c4):
    states = jax.vmap(c4.init)(jax.random.split(jax.random.key(0), 64))
    values = np.asarray(jax.jit(lambda k, s: random_playout(c4, k, s))(jax.random.key(1), states))
    assert set(np.unique(values)) <= {-1.0, 0.0, 1.0}
    # Random play: the first player wins a little more often than the second.
    assert -0.3 < values.mean() < 0.6


# ---------------------------------------------------------------- rollout MCTS


def test_rollout_mcts_beats_random(c4):
    res = match(c4, rollout_mcts_agent(c4, 64), random_agent(c4), 20, jax.random.key(3))
    assert res.wins >= 18, str(res)
    assert res.illegal == 0


def test_rollout_mcts_wins_and_blocks(c4):
    # X (to move) has three in a row on the bottom: column 4 (action 3) wins.
    win = _position(c4, [0, 6, 1, 6, 2, 5])
    # O threatens the bottom row (3, 4, 5 taken; 6 blocked by X): X must play column 3 (action 2).
    block = _position(c4, [0, 3, 0, 4, 6, 5])
    states = _stack([win] * 4 + [block] * 4)
    act = jax.jit(rollout_mcts_agent(c4, 200).act)
    actions = np.asarray(act(None, jax.random.key(4), states))
    np.testing.assert_array_equal(actions, [3] * 4 + [2] * 4)


def test_agent_factories_share_act(c4):
    assert rollout_mcts_agent(c4, 8).act is rollout_mcts_agent(c4, num_simulations=8, c_uct=1.4).act
    assert random_agent(c4).act is random_agent(c4, name="other").act


@pytest.mark.slow
def test_the_material_agent_takes_the_most_valuable_piece_and_plays_only_legal_moves():
    game = make_game("chess")
    # White can take a pawn (exd5) or the queen (Bxg5); one ply of material takes the queen.
    fen = "rnb1kbnr/ppp1pppp/8/3p2q1/4P3/3P4/PPP2PPP/RNBQKBNR w KQkq - 0 3"
    state = jax.tree.map(lambda x: x[None], GameState(env=chess_state_from_fen(fen), komi=jnp.float32(0.0)))
    agent = material_agent(game)
    moves = {game.action_to_str(jax.tree.map(lambda x: x[0], state), int(agent.act(None, jax.random.key(k), state)[0]))
             for k in range(4)}
    assert moves == {"c1g5"}
    with pytest.raises(ValueError, match="plays chess"):
        material_agent(make_game("connect_four"))
    assert parse_agent("material", None, 8)[1] == "chess"  # the arena's spec fixes the game
    with pytest.raises(ValueError, match="plays chess"):
        parse_agent("material", "go_9x9", 8)
    # Against random play from the start, every move is legal (an illegal one would end the game as a loss).
    records = play_games(game, material_agent(game), random_agent(game), jax.random.key(1), num_games=2)
    assert not records.illegal.any() and (records.length > 0).all()


# ---------------------------------------------------------------- network agents


def test_a_checkpoint_agent_takes_the_gumbel_roots_considered_moves_from_its_spec(c4_quick_untrained):
    player, game = parse_agent(f"{c4_quick_untrained}:8:considered=3", None, 64)
    assert game == "connect_four" and player.overrides == {"eval_max_num_considered_actions": 3}
    assert player.name.endswith(":8:considered=3")
    # Host games (against GTP and UCI programs) play it through an engine with the same override.
    engine = Engine.from_checkpoint(str(c4_quick_untrained), config_overrides=player.overrides)
    assert engine.spec().max_num_considered_actions == 3
    assert parse_agent(f"{c4_quick_untrained}:8", None, 64)[0].overrides == {}
    with pytest.raises(ValueError, match="considered needs an integer >= 1, got '0'"):
        parse_agent(f"{c4_quick_untrained}:8:considered=0", None, 64)


def test_a_checkpoint_agent_takes_the_gumbel_roots_c_scale_from_its_spec(c4_quick_untrained):
    player, _ = parse_agent(f"{c4_quick_untrained}:8:considered=7,c_scale=1", None, 64)
    assert player.overrides == {"eval_max_num_considered_actions": 7, "eval_gumbel_c_scale": 1.0}
    assert player.name.endswith(":8:considered=7:c_scale=1.0")
    engine = Engine.from_checkpoint(str(c4_quick_untrained), config_overrides=player.overrides)
    assert engine.spec().gumbel_c_scale == 1.0
    for bad in ("0", "-1", "big"):
        with pytest.raises(ValueError, match=f"c_scale needs a number > 0, got '{bad}'"):
            parse_agent(f"{c4_quick_untrained}:8:c_scale={bad}", None, 64)


@pytest.mark.slow
def test_a_chess_checkpoint_agent_takes_lc0s_twofold_draws_from_its_spec(c4_quick_untrained):
    chess_model = Path(__file__).resolve().parents[2] / "results" / "models" / "chess_quick"
    player, game = parse_agent(f"{chess_model}:8:twofold_draws=1", None, 64)
    assert game == "chess" and player.overrides == {"twofold_draws": True}
    assert player.name.endswith(":8:twofold_draws=1")
    with pytest.raises(ValueError, match="twofold_draws needs 1 \\(on\\) or 0 \\(off\\), got 'yes'"):
        parse_agent(f"{chess_model}:8:twofold_draws=yes", None, 64)
    with pytest.raises(ValueError, match="twofold_draws applies to chess only"):
        parse_agent(f"{c4_quick_untrained}:8:twofold_draws=1", None, 64)


def test_a_sai_checkpoint_agent_takes_the_sensible_agents_lambda_from_its_spec(c4_quick_untrained):
    sai_model = Path(__file__).resolve().parents[2] / "results" / "models" / "go_7x7_sai"
    player, game = parse_agent(f"{sai_model}:8:sensible_lambda=0.5", None, 64)
    assert game == "go_7x7" and player.overrides == {"eval_sensible_lambda": 0.5}
    assert player.name.endswith(":8:sensible_lambda=0.5")
    for bad in ("1.5", "-0.1", "half"):
        with pytest.raises(ValueError, match=f"sensible_lambda needs a number in \\[0, 1\\], got '{bad}'"):
            parse_agent(f"{sai_model}:8:sensible_lambda={bad}", None, 64)
    with pytest.raises(ValueError, match="needs value_head='sai'"):
        parse_agent(f"{c4_quick_untrained}:8:sensible_lambda=0.5", None, 64)


@pytest.mark.slow
def test_untrained_network_agents_play_legal_moves(c4):
    config = Config(num_blocks=1, num_channels=8, num_simulations=4, max_num_considered_actions=4)
    net = make_network(config, c4)
    evaluate = network_evaluator(net.apply)
    init = jax.jit(lambda key: init_params(net, c4, key))  # eager flax init is slow
    params = init(jax.random.key(0))

    states = _stack([_position(c4, []), _position(c4, [3] * 6), _position(c4, [0, 1, 0, 1, 0, 1, 0])])
    actions = np.asarray(policy_agent(c4, evaluate, params=params)(jax.random.key(2), states))
    legal = np.asarray(states.legal_action_mask)
    assert actions.dtype == np.int32 and legal[np.arange(2), actions[:2]].all()  # the third game is over

    # The config's Gumbel search against PUCT, in one compiled arena; the arena flags illegal moves.
    gumbel = network_agent(config, c4, params)
    puct = search_agent(c4, evaluate, SearchSpec(kind="puct", num_simulations=4), name="puct", params=params)
    res = match(c4, gumbel, puct, 2, jax.random.key(3))
    assert res.games == 2 and res.illegal == 0 and res.mean_length >= 7

    # Periodic evaluation: new params reuse the compiled arena.
    size = arena.play_jit._cache_size()
    new = network_agent(config, c4, init(jax.random.key(9)))
    assert new.act is gumbel.act
    res = match(c4, new, puct, 2, jax.random.key(4))
    assert res.illegal == 0 and arena.play_jit._cache_size() == size


# ---------------------------------------------------------------- statistics


def test_elo_from_score():
    assert elo_from_score(0.5) == 0
    assert elo_from_score(0.75) == pytest.approx(400 * np.log10(3))
    assert np.isfinite(elo_from_score(1.0)) and elo_from_score(0.0) == -elo_from_score(1.0)
    assert score_from_elo(elo_from_score(0.3)) == pytest.approx(0.3)


def test_interval_contains_score_and_shrinks():
    widths = []
    for n in (10, 100, 1000):
        for score in (0.0, 0.3, 0.5, 1.0):
            low, high = wilson_interval(score, n)
            assert 0 <= low <= score <= high <= 1
        low, high = wilson_interval(0.3, n)
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    res = MatchResult("a", "b", wins=6, draws=2, losses=2, first_score=0.7, mean_length=10.0)
    low, high = res.score_interval
    assert res.score == 0.7 and low < 0.7 < high
    e_low, e_high = res.elo_interval
    assert e_low < res.elo < e_high and res.to_dict()["elo"] == pytest.approx(res.elo)


def test_fit_elo_recovers_ratings():
    true = {"a": 0.0, "b": 150.0, "c": -200.0, "d": 400.0}
    names = list(true)
    pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1 :]]

    # Exact expected points: the maximum-likelihood fit is the truth.
    n = 1000
    exact = [(x, y, n * score_from_elo(true[x] - true[y]), n) for x, y in pairs]
    fit = fit_elo(names, exact)
    for name in names:
        assert fit.ratings[name] == pytest.approx(true[name], abs=1e-6)
    assert fit.stderr["a"] == 0 and all(0 < fit.stderr[x] < 40 for x in "bcd")

    # Sampled games (with draws): within 3 standard errors; anchor elsewhere shifts everything.
    rng = np.random.default_rng(0)
    sampled = []
    for x, y in pairs:
        p = score_from_elo(true[x] - true[y])
        draw = 0.4 * min(p, 1 - p)  # keeps the expected score at p
        outcomes = rng.choice([1.0, 0.5, 0.0], size=400, p=[p - draw / 2, draw, 1 - p - draw / 2])
        sampled.append((x, y, outcomes.sum(), 400))
    fit = fit_elo(names, sampled)
    for name in "bcd":
        assert abs(fit.ratings[name] - true[name]) < 3 * fit.stderr[name] + 1
    shifted = fit_elo(names, sampled, anchor="d", anchor_rating=400.0)
    assert shifted.ratings["d"] == 400.0
    for name in names:
        assert shifted.ratings[name] - fit.ratings[name] == pytest.approx(400.0 - fit.ratings["d"], abs=1e-6)

    with pytest.raises(ValueError, match="links"):
        fit_elo(["a", "b", "c"], [("a", "b", 5, 10)])


def test_the_scripts_take_only_jax_agents_of_their_game():
    assert require_jax_agent("mcts:4", "connect_four", 8).kind == "jax"
    external = f"gtp:{sys.executable}"  # a program that exists everywhere
    with pytest.raises(SystemExit, match=re.escape(f"{external!r} is not a Connect Four agent of azjax")):
        require_jax_agent(external, "connect_four", 8)
