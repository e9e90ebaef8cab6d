"""SAI sigmoid-komi values (docs/methods.md section 2): the interval average mu against numerical integration,
lambda = 0 against the plain winrate, per-game komi scoring (hand count, GNU Go), the komi distribution of
new games, the branching rule, the start-state queue, the sensible agent's preference for a larger
winning margin through the real search, and the loop, CLI and script end to end on tiny configs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from outside_programs import outside_program
from scipy import integrate, stats

from azjax.config import Config, preset
from azjax.games import Game, GameState, board_lead_black, make_game
from azjax.methods import sai
from azjax.methods import start_states as ss
from azjax.search import ParentAwareEvaluator, SearchSpec, run_search

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def go7() -> Game:
    return make_game("go_7x7")


@pytest.fixture(scope="module")
def go7_step(go7: Game):
    return jax.jit(jax.vmap(go7.step))


def _play(game: Game, step, states: GameState, moves: list[str]) -> GameState:
    """Plays the same moves (GTP notation) in every game of the batch."""
    for text in moves:
        action = game.parse_action(jax.tree.map(lambda v: v[0], states), text)
        states = step(states, jnp.full(states.komi.shape, action, jnp.int32))
    return states


# ---------------------------------------------------------------- the sigmoid and mu


def _mu_numeric(a: float, beta: float, y: float) -> float:
    if y == 0:
        return 1.0 / (1.0 + math.exp(-beta * a))
    f = lambda x: 1.0 / (1.0 + math.exp(-beta * (a + x)))  # noqa: E731
    value, _ = integrate.quad(f, min(0.0, y), max(0.0, y), epsabs=1e-12, epsrel=1e-12, limit=200)
    return value / abs(y)


@pytest.mark.parametrize("beta", [0.05, 0.2, 1.0, 4.0])
def test_interval_winrate_matches_numerical_integration(beta: float) -> None:
    a = np.array([-30.0, -9.5, -2.0, -0.3, 0.0, 0.4, 1.5, 7.0, 25.0])
    y = np.array([-40.0, -12.0, -3.0, -1.0, -0.05, -2e-3, -9e-4, -1e-6, 0.0, 1e-6, 5e-4, 1.5e-3, 0.3, 2.0, 9.5, 33.0])
    aa, yy = np.meshgrid(a, y, indexing="ij")
    got = np.asarray(sai.interval_winrate(jnp.float32(aa), jnp.float32(beta), jnp.float32(yy)))
    want = np.vectorize(lambda a_, y_: _mu_numeric(a_, beta, y_))(aa, yy)
    # |y| >= 1e-3: the closed form itself (float32). |y| < 1e-3: mu is rho(0), off from the integral by at
    # most max|rho'| |y| / 2 = beta |y| / 8.
    tol = np.where(np.abs(yy) < sai.SMALL_INTERVAL, beta * np.abs(yy) / 8 + 1e-6, 2e-6)
    assert np.all(np.abs(got - want) <= tol), np.max(np.abs(got - want) - tol)
    # The textbook closed form (float64) agrees too, where it does not cancel.
    big = np.abs(yy) >= 0.3
    a1, b1 = np.abs(aa), np.abs(aa + yy)
    log_sig = lambda t: -np.logaddexp(0.0, -t)  # noqa: E731
    ys = np.where(big, yy, 1.0)
    textbook = 0.5 + (b1 - a1) / (2 * ys) + (log_sig(beta * a1) - log_sig(beta * b1)) / (beta * ys)
    np.testing.assert_allclose(got[big], textbook[big], atol=2e-6)


def test_sigmoid_conventions() -> None:
    # kbar: +komi for White to move, -komi for Black; rho(x) = sigmoid(beta (alpha + kbar + x)).
    np.testing.assert_array_equal(sai.signed_komi(jnp.float32([9.5, 9.5]), jnp.array([True, False])), [-9.5, 9.5])
    np.testing.assert_allclose(sai.winrate(jnp.float32(12.0), jnp.float32(0.5), jnp.float32(-9.5)),
                               1 / (1 + math.exp(-0.5 * 2.5)), rtol=1e-6)
    np.testing.assert_allclose(sai.winrate(12.0, 0.5, -9.5, x=-2.5), 0.5)
    assert float(sai.score_lead(jnp.float32(12.0), jnp.float32(-9.5))) == 2.5
    np.testing.assert_array_equal(sai.black_board_lead(jnp.float32([3.0, 3.0]), jnp.array([True, False])), [3, -3])
    assert sai.beta_scale(49) == pytest.approx(10 / 49)


def test_lambda_zero_is_the_plain_winrate() -> None:
    alpha = jnp.float32([-20.0, -3.0, 0.0, 2.5, 14.0])
    beta = jnp.float32([0.1, 0.5, 1.0, 2.0, 8.0])
    kbar = jnp.float32([9.5, -9.5, 0.5, -7.5, 9.5])
    np.testing.assert_array_equal(sai.sensible_bonus(alpha, beta, kbar, 0.0), 0.0)
    rho = sai.winrate(alpha, beta, kbar)
    np.testing.assert_array_equal(sai.interval_winrate(alpha + kbar, beta, jnp.zeros(5)), rho)
    # lambda > 0 moves the target winrate towards 1/2: xbar is a handicap for the side ahead.
    xbar = sai.sensible_bonus(alpha, beta, kbar, 0.5)
    lead = np.asarray(alpha + kbar)
    assert np.all(np.sign(np.asarray(xbar))[lead != 0] == -np.sign(lead[lead != 0]))
    pi = sai.winrate(alpha, beta, kbar, x=xbar)
    np.testing.assert_allclose(pi, 0.5 * np.asarray(rho) + 0.25, atol=1e-5)
    # lambda = 1: the bonus that makes the game even.
    np.testing.assert_allclose(sai.sensible_bonus(alpha, beta, kbar, 1.0), -(alpha + kbar), atol=1e-5)


# ---------------------------------------------------------------- the sensible agent in the search


A_VERTEX, B_VERTEX = "C3", "E5"  # the two winning moves of the constructed position


def _margin_heads(a_action: int, b_action: int):
    """Hand-made heads for a position where Black, to move, wins whatever it plays: Black's board lead is 22,
    or 30 once Black holds A (the bigger win); beta = 2. With komi 9.5 both win for certain in float32
    (sigmoid(2 * 12.5) = 1). Priors: A logit 0, B logit `params["b_prior"]`, every other move -30."""

    def heads(params, states):
        logits = jnp.full(states.legal_action_mask.shape, -30.0)
        logits = logits.at[:, a_action].set(0.0).at[:, b_action].set(params["b_prior"])
        stone_a = states.env._x.board[:, a_action] > 0  # pgx: Black stones are positive
        black_lead = jnp.where(stone_a, 30.0, 22.0)
        alpha = sai.black_board_lead(black_lead, sai.black_to_move(states))  # the player to move's lead
        return logits, alpha, jnp.full(alpha.shape, 2.0)

    return heads


@pytest.fixture(scope="module")
def margin_search(go7: Game):
    start = go7.init(jax.random.key(0))
    a_action, b_action = go7.parse_action(start, A_VERTEX), go7.parse_action(start, B_VERTEX)
    heads = _margin_heads(a_action, b_action)
    spec = SearchSpec(kind="puct", num_simulations=48, dirichlet_fraction=0.0)
    evaluators = {lam: sai.sensible_evaluator(heads, lam) for lam in (0.0, 0.5)}
    evaluators["plain"] = sai.winrate_evaluator(heads)
    searches = {name: jax.jit(lambda params, key, states, e=e: run_search(spec, go7, e, params, key, states))
                for name, e in evaluators.items()}
    return a_action, b_action, searches


@pytest.mark.slow
def test_sensible_agent_prefers_the_larger_winning_margin(go7: Game, margin_search) -> None:
    a_action, b_action, searches = margin_search
    roots = jax.vmap(lambda k: go7.init(k, 9.5))(jax.random.split(jax.random.key(0), 2))
    params = {"b_prior": jnp.float32(1.0)}
    q = {}
    visits = {}
    for name, fn in searches.items():
        out = fn(params, jax.random.key(1), roots)
        tree = out.search_tree
        q[name] = np.asarray(tree.qvalues(jnp.zeros(2, jnp.int32)))[0]
        visits[name] = np.asarray(tree.summary().visit_counts)[0]
    # lambda = 0 through the parent-aware path is the plain winrate search.
    np.testing.assert_array_equal(visits[0.0], visits["plain"])
    np.testing.assert_allclose(q[0.0], q["plain"], atol=1e-6)
    # Plain winrates cannot tell the two wins apart (both 1 in float32); the prior favours B.
    assert q[0.0][a_action] == q[0.0][b_action] == 1.0
    assert visits[0.0][b_action] > visits[0.0][a_action]
    # With lambda > 0 Black, ahead, values the bigger win higher and searches it most.
    assert q[0.5][a_action] > q[0.5][b_action]
    assert np.argmax(visits[0.5]) == a_action, visits[0.5][[a_action, b_action]]


def test_sensible_child_value_by_hand(go7: Game, go7_step) -> None:
    """One child evaluation against mu computed from the formulas: Black to move at the parent, White at the child."""
    lam, beta = 0.4, 0.7

    def heads(params, states):
        black = sai.black_to_move(states)
        alpha = jnp.where(black, params["lead"], -params["lead"])
        return jnp.zeros(states.legal_action_mask.shape), alpha, jnp.full(alpha.shape, beta)

    ev = sai.sensible_evaluator(heads, lam)
    assert isinstance(ev, ParentAwareEvaluator)
    root_fn, child_fn = jax.jit(ev.root), jax.jit(ev.child)  # one compile each, not one per op
    root = jax.tree.map(lambda x: x[None], go7.init(jax.random.key(0), 6.5))
    params = {"lead": jnp.float32(10.0)}  # Black leads by 10 on the board: +3.5 after komi
    _, v_root, xbar_black = root_fn(params, root)
    p = 1 / (1 + math.exp(-beta * 3.5))
    pi = (1 - lam) * p + lam / 2
    xbar = math.log(pi / (1 - pi)) / beta - 3.5
    np.testing.assert_allclose(v_root, 2 * p - 1, rtol=1e-5)
    np.testing.assert_allclose(xbar_black, xbar, rtol=1e-5)
    child = go7_step(root, jnp.int32([0]))  # White to move now
    _, v_child, _ = child_fn({"lead": jnp.float32(12.0)}, child, xbar_black)
    mu_black = _mu_numeric(12.0 - 6.5, beta, xbar)
    np.testing.assert_allclose(v_child, 1 - 2 * mu_black, atol=1e-5)  # White's view


def test_sensible_child_value_with_a_white_parent_by_hand(go7: Game, go7_step) -> None:
    """White to move at the parent, Black at the child: the parent's xbar is White's bonus, handed to the child
    as Black's bonus -xbar_white, and the child's value is Black's 2 mu - 1."""
    lam, beta, komi = 0.4, 0.7, 6.5

    def heads(params, states):
        black = sai.black_to_move(states)
        alpha = jnp.where(black, params["lead"], -params["lead"])
        return jnp.zeros(states.legal_action_mask.shape), alpha, jnp.full(alpha.shape, beta)

    ev = sai.sensible_evaluator(heads, lam)
    root_fn, child_fn = jax.jit(ev.root), jax.jit(ev.child)
    first = jax.tree.map(lambda x: x[None], go7.init(jax.random.key(0), komi))
    parent = go7_step(first, jnp.int32([24]))  # Black played; White to move
    assert not bool(sai.black_to_move(parent)[0])
    _, v_parent, xbar_black = root_fn({"lead": jnp.float32(4.0)}, parent)
    white_lead = -4.0 + komi  # White's expected margin after komi
    p = 1 / (1 + math.exp(-beta * white_lead))
    pi = (1 - lam) * p + lam / 2
    xbar_white = math.log(pi / (1 - pi)) / beta - white_lead
    np.testing.assert_allclose(v_parent, 2 * p - 1, rtol=1e-5)  # White's view
    np.testing.assert_allclose(xbar_black, -xbar_white, rtol=1e-5)
    child = go7_step(parent, jnp.int32([0]))  # Black to move again
    _, v_child, _ = child_fn({"lead": jnp.float32(2.0)}, child, xbar_black)
    mu_black = _mu_numeric(2.0 - komi, beta, -xbar_white)
    np.testing.assert_allclose(v_child, 2 * mu_black - 1, atol=1e-5)  # Black's view


def test_sai_loss_forms_the_value_from_alpha_beta_and_the_signed_komi() -> None:
    """v = 2 sigmoid(beta (alpha + kbar)) - 1 in the value loss; with kbar's sign flipped the loss differs."""
    from azjax.train.loop import loss_fn

    logits = jnp.zeros((2, 3))
    alpha, beta = jnp.array([10.0, -3.0]), jnp.array([0.5, 0.2])
    kbar = jnp.array([-7.5, 7.5])  # Black to move at komi 7.5; White to move at komi 7.5
    z = jnp.array([1.0, -1.0])
    apply = lambda params, obs: ((logits, alpha, beta), {})  # noqa: E731
    policy = jnp.full((2, 3), 1 / 3)
    _, info = loss_fn(apply, sai.SigmoidKomiValue(), {}, None, policy, z, 1.0, {"kbar": kbar})
    v = 2 / (1 + np.exp(-np.array([0.5 * 2.5, 0.2 * 4.5]))) - 1
    np.testing.assert_allclose(info["value_loss"], np.mean((v - np.array([1.0, -1.0])) ** 2), rtol=1e-6)
    _, flipped = loss_fn(apply, sai.SigmoidKomiValue(), {}, None, policy, z, 1.0, {"kbar": -kbar})
    assert abs(float(flipped["value_loss"]) - float(info["value_loss"])) > 0.1
    np.testing.assert_allclose([info["alpha_std"], info["beta_std"]], [6.5, 0.15], rtol=1e-6)


# ---------------------------------------------------------------- per-game komi scoring


# 7x7: Black walls column C, White column E, Black adds D4; column D's other points touch both colours (dame).
# Area: Black 21 + 1 = 22, White 21: Black leads by 1 on the board.
WALLS = [m for r in range(1, 8) for m in (f"C{r}", f"E{r}")] + ["D4", "pass", "pass"]
WALLS_LEAD = 1
WALLS_KOMIS = [-3.5, -0.5, 0.5, 1.5, 7.5, 9.5]


def _gnugo_final_score(gnugo: str, komi: float, moves: list[str]) -> float:
    """Black's margin by GNU Go (at path `gnugo`)'s `final_score` after `moves` (alternating from Black) on 7x7."""
    args = [gnugo, "--mode", "gtp", "--chinese-rules", "--capture-all-dead", "--positional-superko",
            "--never-resign", "--seed", "1", "--boardsize", "7", "--level", "1"]
    colors = ["b", "w"]
    commands = ["clear_board", f"komi {komi}"] + [f"play {colors[i % 2]} {m}" for i, m in enumerate(moves)]
    commands += ["final_score", "quit"]
    out = subprocess.run(args, input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=60).stdout
    replies = [r.strip() for r in out.split("\n\n") if r.strip()]
    assert all(r.startswith("=") for r in replies), replies
    score = replies[-2][1:].strip()
    side, points = score.split("+")
    return float(points) if side == "B" else -float(points)


def test_per_game_komi_scoring(go7: Game, go7_step) -> None:
    keys = jax.random.split(jax.random.key(1), len(WALLS_KOMIS))
    states = jax.vmap(go7.init)(keys, jnp.float32(WALLS_KOMIS))
    before_end = _play(go7, go7_step, states, WALLS[:-1])
    final = _play(go7, go7_step, before_end, WALLS[-1:])
    assert np.asarray(final.terminated).all()
    np.testing.assert_array_equal(final.komi, WALLS_KOMIS)
    lead = np.asarray(jax.vmap(lambda x: board_lead_black(x, 7))(final.env._x))
    np.testing.assert_array_equal(lead, WALLS_LEAD)
    order = np.asarray(final.env._player_order)  # player id of Black, White
    black_reward = np.asarray(final.rewards)[np.arange(len(WALLS_KOMIS)), order[:, 0]]
    np.testing.assert_array_equal(black_reward, np.where(WALLS_LEAD - np.float32(WALLS_KOMIS) > 0, 1.0, -1.0))
    # The sigmoid's convention agrees with the scoring: at the last position (Black to move, the board lead
    # settled) alpha = Black's lead, and a steep sigmoid gives Black's result.
    black = np.asarray(sai.black_to_move(before_end))
    assert black.all()
    kbar = sai.signed_komi(before_end.komi, black)
    rho = np.asarray(sai.winrate(jnp.float32(WALLS_LEAD), 50.0, kbar))
    np.testing.assert_array_equal(2 * rho - 1, black_reward)
    gnugo = outside_program("gnugo")  # the hand count above is checked either way
    for komi in WALLS_KOMIS:
        assert _gnugo_final_score(gnugo, komi, WALLS) == WALLS_LEAD - komi, komi


# ---------------------------------------------------------------- komi of new games


def test_new_game_komi_follows_the_empty_board_sigmoid() -> None:
    """K = 0.5 + floor(X), X logistic(alpha0, 1/beta0): binned chi-square against the logistic CDF.

    The test's size: 40,000 draws, bins with expected count >= 5 (tails pooled), p-value > 1e-4 (a correct
    sampler fails once in 10,000 runs; the seed is fixed, so the outcome is deterministic anyway).
    """
    alpha0, beta0, n = 3.3, 0.4, 40_000
    komi = np.asarray(sai.new_game_komi(jax.random.key(7), jnp.float32(alpha0), jnp.float32(beta0), (n,),
                                        official_komi=9.5, official_share=0.0, max_abs=49.5))
    assert np.all(komi * 2 % 2 == 1), "half-integers only"
    cdf = lambda x: 1 / (1 + np.exp(-beta0 * (x - alpha0)))  # noqa: E731  P(X <= x)
    m = np.arange(-49, 49)
    expected = n * (cdf(m + 1.0) - cdf(m.astype(float)))  # P(K = m + 0.5)
    observed = np.array([(komi == k + 0.5).sum() for k in m], float)
    keep = expected >= 5
    lo, hi = m[keep].min(), m[keep].max()
    obs = np.concatenate([[(komi < lo + 0.5).sum()], observed[keep], [(komi > hi + 0.5).sum()]])
    exp = np.concatenate([[n * cdf(float(lo))], expected[keep], [n * (1 - cdf(hi + 1.0))]])
    chi2, p = stats.chisquare(obs, exp * n / exp.sum())
    assert p > 1e-4, (chi2, p)
    # The mean of K is alpha0 (the logistic is symmetric; floor + 0.5 is unbiased on average).
    assert abs(komi.mean() - alpha0) < 4 * (math.pi / math.sqrt(3) / beta0) / math.sqrt(n) + 0.05


def test_official_komi_share_and_clipping() -> None:
    n, share = 20_000, 0.3
    komi = np.asarray(sai.new_game_komi(jax.random.key(3), jnp.float32(-40.0), jnp.float32(0.05), (n,),
                                        official_komi=9.5, official_share=share, max_abs=49.5))
    # Draws centred on -40 with scale 20 reach 9.5 with probability ~0.016; 4 binomial standard errors.
    p_sigmoid = 1 / (1 + np.exp(-0.05 * (10 + 40))) - 1 / (1 + np.exp(-0.05 * (9 + 40)))
    p = share + (1 - share) * p_sigmoid
    assert abs((komi == 9.5).mean() - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert komi.min() == -49.5 and komi.max() <= 49.5  # far tails are clipped to the board's size


# ---------------------------------------------------------------- branching


def _record_synthetic_games(go7: Game, b: int, t: int, k: int, p: float):
    """B synthetic games of T positions each, alpha_black drawn per position; each position's index is
    stored in its `_step_count` so the kept branch points can be traced back. Returns (points, alpha_black)."""
    games = jax.vmap(go7.init)(jax.random.split(jax.random.key(0), b))
    points = sai.init_branch_points(games, k)
    alpha_black = np.random.default_rng(0).normal(0, 10, (t, b)).astype(np.float32)
    record = jax.jit(lambda pts, key, s, a: sai.record_branch_points(pts, key, s, a, p, 49.5))
    keys = jax.random.split(jax.random.key(1), t)
    for i in range(t):
        tagged = games.replace(env=games.env.replace(_step_count=jnp.full(b, i, jnp.int32)))
        points = record(points, keys[i], tagged, jnp.asarray(alpha_black[i]))
    return points, alpha_black


@pytest.mark.slow
def test_branching_rate_and_komi(go7: Game) -> None:
    """Each position is drawn with probability C_branch and at most K per game are kept, each with komi
    0.5 + floor(alpha_black): the number kept per game follows min(Binomial(T, C), K) (chi-square), the number
    drawn has mean T C (within 5 standard errors)."""
    b, t, k, p = 1000, 40, 3, 0.05
    points, alpha_black = _record_synthetic_games(go7, b, t, k, p)
    flat, mask, emptied = sai.take_branch_points(points, jnp.ones(b, bool))
    count = np.asarray(points.count)
    np.testing.assert_array_equal(np.asarray(mask).reshape(b, k).sum(1), count)
    assert not np.asarray(emptied.count).any() and not np.asarray(emptied.drawn).any()
    probs = stats.binom.pmf(np.arange(k), t, p)
    expected = np.append(probs, 1 - probs.sum()) * b
    observed = np.bincount(count, minlength=k + 1)
    assert stats.chisquare(observed, expected).pvalue > 1e-4, (observed, expected)
    drawn = np.asarray(points.drawn)
    assert abs(drawn.mean() - t * p) < 5 * math.sqrt(t * p * (1 - p) / b)
    at = np.asarray(flat.env._step_count).reshape(b, k)
    komi = np.asarray(flat.komi).reshape(b, k)
    for slot in range(b):
        idx = at[slot, : count[slot]]
        assert len(set(idx)) == len(idx)
        np.testing.assert_array_equal(komi[slot, : count[slot]], 0.5 + np.floor(alpha_black[idx, slot]))


def test_branch_points_kept_are_a_uniform_choice_among_those_drawn(go7: Game) -> None:
    """With ~10 draws per game and K = 3, every position is equally likely to be kept (each is drawn with the
    same probability, and a uniform choice among the drawn keeps each drawn one alike): the kept indices are
    uniform over the game (chi-square). Keeping the first K drawn would crowd them into the opening."""
    b, t, k, p = 1000, 40, 3, 0.25
    points, _ = _record_synthetic_games(go7, b, t, k, p)
    assert (np.asarray(points.count) == np.minimum(np.asarray(points.drawn), k)).all()
    flat, mask, _ = sai.take_branch_points(points, jnp.ones(b, bool))
    kept = np.asarray(flat.env._step_count)[np.asarray(mask)]
    observed = np.bincount(kept, minlength=t)
    assert stats.chisquare(observed).pvalue > 1e-4, observed
    assert abs(kept.mean() - (t - 1) / 2) < 1.0


def test_branching_skips_terminal_and_inactive(go7: Game) -> None:
    games = jax.vmap(go7.init)(jax.random.split(jax.random.key(0), 4))
    games = games.replace(env=games.env.replace(terminated=jnp.array([False, True, False, False])))
    points = sai.init_branch_points(games, 2)
    for i in range(3):
        points = sai.record_branch_points(points, jax.random.key(i), games, jnp.full(4, 2.7), 1.0, 49.5,
                                          active=jnp.array([True, True, False, True]))
    np.testing.assert_array_equal(points.count, [2, 0, 0, 2])  # at most K = 2; never terminal or inactive
    np.testing.assert_array_equal(points.states.komi[0], [2.5, 2.5])


# ---------------------------------------------------------------- the start-state queue


def test_start_state_queue(go7: Game) -> None:
    # Jitted, as the loop runs them: op by op, each primitive on each of a Go state's fields compiles alone.
    push, pop, sample = jax.jit(ss.push), jax.jit(ss.pop), jax.jit(ss.sample)
    template = go7.init(jax.random.key(0))
    q = ss.init(template, 4)
    batch = jax.jit(jax.vmap(go7.init))(jax.random.split(jax.random.key(1), 6), jnp.arange(6.0))  # komi = index
    q = push(q, batch, jnp.array([True, False, True, True, False, False]))  # 0, 2, 3
    assert int(q.size) == 3 and int(q.pushed[0]) == 3
    q, states, got = pop(q, jnp.array([False, True, True]))
    np.testing.assert_array_equal(got, [False, True, True])
    np.testing.assert_array_equal(states.komi[1:], [0.0, 2.0])  # oldest first
    assert int(q.size) == 1
    q = push(q, batch, jnp.array([False, True, False, False, True, True]))  # 1, 4, 5: ring of 4 wraps
    q, states, got = pop(q, jnp.ones(6, bool))
    np.testing.assert_array_equal(got, [True] * 4 + [False] * 2)
    np.testing.assert_array_equal(states.komi[:4], [3.0, 1.0, 4.0, 5.0])
    # Overflow: the oldest are overwritten; more than C at once keeps the last C.
    q = push(q, batch, jnp.ones(6, bool))
    assert int(q.size) == 4
    q2, states, got = pop(q, jnp.ones(4, bool))
    np.testing.assert_array_equal(states.komi, [2.0, 3.0, 4.0, 5.0])
    # Uniform sampling (Go-Exploit's use) leaves the store as it is.
    drawn, got = sample(q, jax.random.key(0), jnp.ones(4000, bool))
    assert got.all() and int(q.size) == 4
    assert set(np.unique(np.asarray(drawn.komi))) == {2.0, 3.0, 4.0, 5.0}
    _, got = sample(q2, jax.random.key(0), jnp.ones(3, bool))
    assert not np.asarray(got).any()
    with pytest.raises(ValueError, match="capacity"):
        ss.init(template, 0)


# ---------------------------------------------------------------- config


def test_sai_config_validation() -> None:
    assert Config().value_head == "tanh" and Config().sensible_lambda == 0.0
    Config(game="go_7x7", value_head="sai", sensible_lambda=0.5)
    with pytest.raises(ValueError, match="value_head='sai'.*Go only"):
        Config(game="connect_four", value_head="sai")
    with pytest.raises(ValueError, match="value_head must be one of"):
        Config(game="go_7x7", value_head="sigmoid")
    for name in ("branch_prob", "sensible_lambda", "sai_official_komi_share"):
        with pytest.raises(ValueError, match=f"{name} must be in"):
            Config(game="go_7x7", value_head="sai", **{name: 1.5})
    with pytest.raises(ValueError, match="max_branches must be >= 0"):
        Config(game="go_7x7", value_head="sai", max_branches=-1)
    with pytest.raises(ValueError, match="start_queue_size must be >= 1"):
        Config(game="go_7x7", value_head="sai", start_queue_size=0)
    with pytest.raises(ValueError, match="sensible_lambda.*needs value_head='sai'"):
        Config(game="go_7x7", sensible_lambda=0.5)
    # the player's lambda: unset is self-play's; a value is checked as self-play's is, in one line
    assert Config().eval_sensible_lambda is None
    Config(game="go_7x7", value_head="sai", eval_sensible_lambda=0.5)
    with pytest.raises(ValueError, match=r"^eval_sensible_lambda must be in \[0, 1\][^\n]*$"):
        Config(game="go_7x7", value_head="sai", eval_sensible_lambda=1.5)
    with pytest.raises(ValueError, match="^eval_sensible_lambda=0.5 needs value_head='sai'"):
        Config(game="go_7x7", eval_sensible_lambda=0.5)


# ---------------------------------------------------------------- the loop, CLI and script



@pytest.mark.slow
def test_sai_loop_trains_with_komi_per_game_and_branches(sai_tiny_overrides: dict) -> None:
    from azjax.train.loop import Trainer

    cfg = preset("go_7x7", **sai_tiny_overrides)
    trainer = Trainer(cfg)
    state = trainer.init(0)
    komi0 = np.asarray(state.actors.state.komi)
    assert len(set(komi0.tolist())) > 1, "new games draw their komi"
    totals = {"branch_starts": 0, "branches_queued": 0, "games": 0, "new_games": 0}
    losses, komi_seen, alpha_std = [], set(komi0.tolist()), []
    for step in range(cfg.num_steps):
        state, m = trainer.step(state)
        m = jax.device_get(m)
        if step == 0:  # every game began with Black to move: entry 0 of each slot has kbar -komi, entry 1 +komi
            b = cfg.num_envs
            np.testing.assert_array_equal(np.asarray(state.replay.extras["kbar"][:b]), -komi0)
            np.testing.assert_array_equal(np.asarray(state.replay.extras["kbar"][b:2 * b]), komi0)
        # Branches start only from standard games: a branch game never holds branch points.
        branch_game = np.asarray(state.actors.slots.branch_game)
        assert not np.asarray(state.actors.slots.branches.count)[branch_game].any()
        assert int(m["unvisited_greedy_moves"]) == 0
        if m["sgd_applied"]:
            alpha_std.append(float(m["alpha_std"]))
        komi_seen |= set(np.asarray(state.actors.state.komi).tolist())
        for key in totals:
            totals[key] += int(m[key])
        if m["sgd_applied"]:
            losses.append(float(m["loss"]))
        assert np.isfinite(float(m["empty_board_black_lead"])) and float(m["empty_board_beta"]) > 0
    assert losses and np.all(np.isfinite(losses))
    assert totals["games"] > 0 and totals["branches_queued"] > 0
    assert 0 < totals["branch_starts"] <= totals["branches_queued"], totals
    assert min(alpha_std) > 1e-3, alpha_std  # the alpha head is alive: its output varies across positions
    assert len(komi_seen) > 2, komi_seen
    # Every replay entry keeps its own signed komi: +-komi of its game, the sign by the colour to move.
    replay = state.replay
    filled = np.asarray(replay.game_id) >= 0
    kbar = np.asarray(replay.extras["kbar"])[filled]
    assert np.all(kbar * 2 % 2 == 1) and (kbar > 0).any() and (kbar < 0).any()
    assert state.starts is not None and int(state.starts.size) <= cfg.start_queue_size
    # The plain loop state has none of this.
    plain = jax.eval_shape(Trainer(preset("go_7x7", **{**sai_tiny_overrides, "value_head": "tanh"})).init, 0)
    assert plain.replay.extras == {} and plain.starts is None and plain.actors.slots is None


# The loop fields of conftest's `sai_tiny_overrides` (with --num_steps 8): the CLI's and the script's step is
# the program the loop test builds, from the session's compilation cache.
CLI_TINY = ["--num_envs", "8", "--num_simulations", "4", "--moves_per_step", "16", "--replay_size", "256",
            "--min_replay_size", "8", "--batch_size", "8", "--sgd_steps_per_step", "1", "--num_blocks", "1",
            "--num_channels", "8", "--eval_every", "0", "--checkpoint_every", "2", "--lr_warmup_steps", "1",
            "--temperature_moves", "4", "--branch_prob", "0.3", "--start_queue_size", "32", "--eval_simulations", "4",
            "--lr_end_fraction", "0.1", "--swa_decay", "0"]  # the defaults, where the "sai" preset differs


def test_tiny_sai_cli_config_is_the_loop_tests_config(sai_tiny_overrides: dict) -> None:
    from azjax.cli import build_parser
    from azjax.config import config_overrides

    args = build_parser().parse_args(["train", "--game", "go_7x7", "--value_head", "sai", "--num_steps", "8",
                                      *CLI_TINY])
    want = preset("go_7x7", **sai_tiny_overrides)
    host_only = ("checkpoint_every", "eval_simulations", "log_every")
    assert preset("go_7x7", **config_overrides(args)).replace(**{k: getattr(want, k) for k in host_only}) == want
    # lab/sai_7x7/sai_7x7.py starts from the "sai" preset; the flags override every loop field where it differs.
    assert preset("go_7x7", "sai", **config_overrides(args)).replace(**{k: getattr(want, k) for k in host_only}) == want


@pytest.mark.slow
def test_cli_train_and_analyze_sai(tmp_path, capsys) -> None:
    from azjax.cli import main

    run = tmp_path / "run"
    assert main(["train", "--game", "go_7x7", "--value_head", "sai", "--run_dir", str(run), "--num_steps", "8",
                 "--no-progress", *CLI_TINY]) == 0
    header = (run / "metrics.csv").read_text().splitlines()[0]
    assert "empty_board_black_lead" in header and "branch_starts" in header
    capsys.readouterr()
    assert main(["analyze", "--game", "go_7x7", "--checkpoint", str(run), "--moves", "D4 E5", "--visits", "4"]) == 0
    text = capsys.readouterr().out
    assert "score estimate:" in text and "winrate at komi 9.5" in text and "Black winrate" in text
    assert "<- game komi" in text
    assert main(["analyze", "--game", "go_7x7", "--checkpoint", str(run), "--moves", "D4", "--visits", "4",
                 "--komi", "7.5", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    r = d["sai"]
    assert r["komi"] == 7.5 and not r["black_to_move"] and r["beta"] > 0
    assert r["score_lead"] == pytest.approx(r["alpha"] + 7.5)  # White to move: kbar = +komi
    assert any(row["komi"] == 7.5 for row in r["komi_table"])
    assert main(["analyze", "--game", "go_9x9", "--checkpoint", str(run), "--visits", "4"]) == 2
    assert "plays go_7x7, not go_9x9" in capsys.readouterr().err


def test_sai_7x7_script_starts_from_the_chosen_sai_preset_with_the_command_lines_fields() -> None:
    script = import_module("lab.sai_7x7.sai_7x7")
    assert script.fresh_config(script.parse_args([])) == preset("go_7x7", "sai")
    gpu = script.fresh_config(script.parse_args(["--preset", "sai_full", "--steps", "300", "--num_simulations", "32"]))
    assert gpu == preset("go_7x7", "sai_full", num_steps=300, num_simulations=32)
    with pytest.raises(SystemExit, match="value_head must stay 'sai'"):
        script.fresh_config(script.parse_args(["--value_head", "tanh"]))


def test_the_gpu_sai_preset_is_the_cpu_one_at_the_papers_network_size_with_the_same_replay_ratio() -> None:
    cpu, gpu = preset("go_7x7", "sai"), preset("go_7x7", "sai_full")
    assert (gpu.num_blocks, gpu.num_channels) == (3, 128)  # the SAI paper's 7x7 networks
    assert gpu.replay_ratio == cpu.replay_ratio == 1.0
    sai_switches = ("value_head", "branch_prob", "max_branches", "sensible_lambda", "temperature_moves", "swa_decay")
    assert all(getattr(gpu, name) == getattr(cpu, name) for name in sai_switches)


@pytest.mark.slow
def test_sai_7x7_script_end_to_end(tmp_path) -> None:
    out = tmp_path / "sai_7x7.json"
    cmd = [sys.executable, "-m", "lab.sai_7x7.sai_7x7", "--steps", "8", "--minutes", "30",
           "--run_dir", str(tmp_path / "run"), "--out", str(out), "--plot", str(tmp_path / "sai_7x7.png"),
           "--model_dir", str(tmp_path / "model"), *CLI_TINY]
    # On the CPU split in two, as the committed seeds ran: the script must split it before JAX starts.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AZJAX_CACHE_DIR": str(jax.config.jax_compilation_cache_dir),
           "AZJAX_CPU_DEVICES": "2"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert len(data["devices"]) == 2 and data["command"].startswith("AZJAX_CPU_DEVICES=2 python -m lab.sai_7x7.sai_7x7")
    pairs = data["empty_board_black_lead"]
    assert len(pairs) == 8 and all(len(p) == 2 and p[0] > 0 for p in pairs)
    assert np.isfinite(data["final_empty_board_black_lead"])
    assert (tmp_path / "sai_7x7.png").stat().st_size > 0
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["config.json", "params.msgpack"]
    assert json.loads((tmp_path / "model" / "config.json").read_text())["value_head"] == "sai"


# ---------------------------------------------------------------- lab/sai_7x7/sai_komi_curve.py


def test_komi_curve_fit_recovers_the_sigmoid_that_made_the_scores() -> None:
    curve = import_module("lab.sai_7x7.sai_komi_curve")
    komis = np.array([-10.5, -0.5, 4.5, 8.5, 9.5, 14.5, 19.5, 29.5])
    for alpha, beta in ((9.0, 0.3), (6.2, 0.08), (-3.0, 1.2)):
        scores = 1.0 / (1.0 + np.exp(-beta * (alpha - komis)))
        fit_alpha, fit_beta = curve.fit_sigmoid(komis, scores, np.full(8, 1000.0))
        assert fit_alpha == pytest.approx(alpha, abs=0.02) and fit_beta == pytest.approx(beta, rel=0.02)


def test_komi_curve_fit_puts_a_clean_drop_between_the_komis_where_it_happens() -> None:
    # Perfect 7x7 play: Black wins every game at komi 8.5 and loses every game at 9.5.
    curve = import_module("lab.sai_7x7.sai_komi_curve")
    komis = np.array([4.5, 8.5, 9.5, 14.5])
    alpha, beta = curve.fit_sigmoid(komis, np.array([1.0, 1.0, 0.0, 0.0]), np.full(4, 64.0))
    assert 8.5 < alpha < 9.5 and beta > 0.9 * curve.MAX_SLOPE
    low, high = curve.bootstrap_alpha(komis, np.array([0.9, 0.6, 0.4, 0.1]), np.full(4, 64.0),
                                      np.random.default_rng(0), resamples=50)
    assert low < 9.0 < high


@pytest.mark.slow
def test_komi_curve_script_plays_each_komi_and_writes_the_fit_beside_the_nets_sigmoid(tmp_path) -> None:
    from azjax.build import init_params, make_network
    from azjax.checkpoint import save_config, save_params

    config = Config(game="go_7x7", value_head="sai", num_blocks=1, num_channels=8, num_simulations=2,
                    temperature_moves=4)
    save_config(tmp_path / "model", config)
    save_params(tmp_path / "model", init_params(make_network(config, make_game("go_7x7")), make_game("go_7x7"),
                                                jax.random.key(0)))
    out, png = tmp_path / "curve.json", tmp_path / "curve.png"
    # A 7x7 board lead is within [-49, 49]: Black wins every game at komi -49.5 and loses every game at 49.5.
    argv = [str(tmp_path / "model"), "--komis", "49.5", "-49.5", "--games", "4", "--gumbel_scale", "0.5",
            "--out", str(out), "--plot", str(png)]
    assert import_module("lab.sai_7x7.sai_komi_curve").main(argv) == 0
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m lab.sai_7x7.sai_komi_curve ")
    assert [r["komi"] for r in data["komis"]] == [-49.5, 49.5] and data["perfect_play_black_lead"] == 9.0
    assert all(r["games"] == 4 for r in data["komis"])
    assert [r["black_score"] for r in data["komis"]] == [1.0, 0.0]
    low, high = (r["net_black_winrate"] for r in data["komis"])
    assert low > high  # the net's sigmoid falls with komi
    assert data["simulations"] == 2 and data["temperature_moves"] == 4 and data["gumbel_scale"] == 0.5
    assert np.isfinite(data["selfplay_fit"]["black_lead"]) and png.stat().st_size > 0


# ---------------------------------------------------------------- lab/sai_7x7/sai_first_move.py


@pytest.mark.slow
def test_the_first_move_probe_reads_each_child_as_the_engines_read_out_does(c4_quick_untrained, tmp_path) -> None:
    from azjax.build import board_game, init_params, make_network, sai_readout
    from azjax.checkpoint import save_config, save_params

    config = Config(game="go_7x7", value_head="sai", num_blocks=1, num_channels=8)
    game = board_game(config)
    params = init_params(make_network(config, game), game, jax.random.key(3))
    save_config(tmp_path / "model", config)
    save_params(tmp_path / "model", params)
    out = tmp_path / "first_move.json"
    probe = import_module("lab.sai_7x7.sai_first_move")
    assert probe.main([str(tmp_path / "model"), "--top", "3", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m lab.sai_7x7.sai_first_move ")
    (row,) = data["models"]
    leads = row["black_lead_after"]
    assert len(leads) == 50  # 49 points and the pass
    root = game.init(jax.random.key(0))
    assert row["empty_board_black_lead"] == pytest.approx(sai_readout(config, game, params, root).black_lead,
                                                          abs=1e-4)
    for move in ("D4", "A1"):  # Black's lead after the move, as `azjax analyze`'s read-out gives it
        child = game.step(root, game.parse_action(root, move))
        assert leads[move] == pytest.approx(sai_readout(config, game, params, child).black_lead, abs=1e-3)
    probs = [p for _, p in row["first_move_policy"]]
    assert len(probs) == 3 and probs == sorted(probs, reverse=True)
    assert row["favourite_move"] == row["first_move_policy"][0][0]
    assert row["lead_after_favourite_move"] == pytest.approx(leads[row["favourite_move"]], abs=1e-3)
    assert min(leads.values()) <= row["policy_weighted_lead_after"] <= max(leads.values())
    by_ply = row["policy_weighted_lead_by_ply"]
    assert by_ply[:2] == [row["empty_board_black_lead"], row["policy_weighted_lead_after"]] and len(by_ply) == 3
    # The favourite line reads Black's lead with White to move and with Black to move as the engine does.
    (first, lead_first), (second, lead_second), *_ = row["greedy_line"]
    assert len(row["greedy_line"]) == 8 and first == row["favourite_move"] and lead_first == pytest.approx(
        leads[first], abs=1e-3)
    child = game.step(root, game.parse_action(root, first))
    grandchild = game.step(child, game.parse_action(child, second))
    assert lead_second == pytest.approx(sai_readout(config, game, params, grandchild).black_lead, abs=1e-3)
    with pytest.raises(SystemExit, match="not a SAI model"):
        probe.main([str(c4_quick_untrained), "--out", str(tmp_path / "x.json")])


def test_komi_curve_script_refuses_a_model_without_a_sai_head(c4_quick_untrained, tmp_path) -> None:
    with pytest.raises(SystemExit, match="not a SAI model"):
        import_module("lab.sai_7x7.sai_komi_curve").main([str(c4_quick_untrained), "--out", str(tmp_path / "x.json")])


# ---------------------------------------------------------------- lab/sai_7x7/sai_replay_fit.py


def _replay_with_known_empty_board_games(config: Config, tmp_path: Path) -> tuple[Path, dict, dict]:
    """A run directory whose one loop checkpoint holds a replay made by hand (and the trained weights, with an
    average 0.05 off them): 8 game slots, each slot's game 10 in flight; the empty-board entries of its games 0-4
    were won by Black below komi 3, those of games 5-9 below komi 8 (each result a draw from
    sigmoid(0.8 (lead - komi))), and every other entry is a position with a stone on it, or an empty board whose
    game has not ended."""
    from azjax.checkpoint import StateCheckpointer, save_config
    from azjax.train.loop import Trainer

    trainer = Trainer(config)
    state = trainer.init(0)
    n, b = config.replay_size, config.num_envs
    rng = np.random.default_rng(1)
    game = make_game("go_7x7")
    empty = np.asarray(game.init(jax.random.key(0)).observation)
    stone = empty.copy()
    stone.flat[0] = not stone.flat[0]
    is_empty = rng.uniform(size=n) < 0.9
    has_target = rng.uniform(size=n) < 0.95
    game_id = rng.integers(0, 10, n).astype(np.int32)
    komi = rng.choice([-0.5, 1.5, 3.5, 5.5, 7.5, 9.5, 12.5], n).astype(np.float32)
    lead = np.where(game_id >= 5, 8.0, 3.0)
    value = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-0.8 * (lead - komi))), 1.0, -1.0).astype(np.float32)
    obs = np.where(is_empty.reshape(-1, *[1] * empty.ndim), empty, stone)
    replay = state.replay.replace(obs=jnp.asarray(obs), has_target=jnp.asarray(has_target),
                                  game_id=jnp.asarray(game_id), value=jnp.asarray(value),
                                  extras={"kbar": jnp.asarray(-komi)})
    # The run averages its weights: the average (what the run gives out) differs from the trained weights.
    average = jax.tree.map(lambda x: x + 0.05, state.params)
    state = state.replace(replay=replay, actors=state.actors.replace(game_id=jnp.full((b,), 10, jnp.int32)),
                          params_average=average)
    run = tmp_path / "run"
    save_config(run, config)
    StateCheckpointer(run).save(4, state)
    np.savez(tmp_path / "made.npz", entries=np.flatnonzero(is_empty & has_target), komi=komi, value=value,
             game_id=game_id)
    return run, jax.device_get(state.params), jax.device_get(average)


@pytest.mark.slow
def test_replay_fit_finds_where_the_replays_empty_board_games_break_even(sai_tiny_overrides: dict, tmp_path) -> None:
    config = preset("go_7x7", **{**sai_tiny_overrides, "replay_size": 2048, "swa_decay": 0.9})
    run, params, average = _replay_with_known_empty_board_games(config, tmp_path)
    made = np.load(tmp_path / "made.npz")
    out = tmp_path / "fit.json"
    env = {k: v for k, v in os.environ.items() if k != "AZJAX_CPU_DEVICES"}  # the script reads it off the checkpoint
    env.update(PYTHONPATH=str(ROOT), AZJAX_CACHE_DIR=str(jax.config.jax_compilation_cache_dir))
    proc = subprocess.run([sys.executable, "-m", "lab.sai_7x7.sai_replay_fit", str(run), "--resamples", "50",
                           "--out", str(out), "--trained_model_dir", str(tmp_path / "trained")],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "break even at" in proc.stdout
    data = json.loads(out.read_text())
    # The device count that wrote the checkpoint, read off it, is part of the command that reruns this.
    assert data["command"].startswith("AZJAX_CPU_DEVICES=1 python -m lab.sai_7x7.sai_replay_fit ") and data["step"] == 4
    entries = made["entries"]
    assert data["empty_board_entries"] == len(entries) == sum(r["entries"] for r in data["komis"])
    for row in data["komis"]:  # Black's score at each komi, counted here from what was written
        at = entries[made["komi"][entries] == row["komi"]]
        assert row["entries"] == len(at) and row["black_score"] == pytest.approx(np.mean(made["value"][at] > 0))
    # Ages 0-4 are games 5-9 (Black ahead by 8); the older games (Black ahead by 3) pull the whole replay's fit down.
    assert data["games_since"] == {"min": 0, "median": pytest.approx(np.median(9 - made["game_id"][entries])),
                                   "max": 9}
    newer, whole = data["fit_newer_half"], data["fit_all"]
    assert abs(newer["black_lead"] - 8.0) < 0.5
    assert newer["black_lead_low"] < newer["black_lead"] < newer["black_lead_high"] < newer["black_lead_low"] + 1.5
    assert 3.5 < whole["black_lead"] < newer["black_lead_low"]
    assert newer["beta"] == pytest.approx(0.8, rel=0.3)
    # The nets' read-outs (trained and averaged weights), beside the data, for each komi in the table.
    from azjax.build import board_game, sai_readout

    game = board_game(config)
    for name, weights in (("trained", params), ("averaged", average)):
        r = sai_readout(config, game, weights, game.init(jax.random.key(0)))
        assert data["net"][name]["black_lead"] == pytest.approx(r.black_lead, abs=1e-4)
        assert data["komis"][0][f"net_{name}_black_winrate"] == pytest.approx(r.black_winrate(data["komis"][0]["komi"]))
    assert data["net"]["trained"]["black_lead"] != pytest.approx(data["net"]["averaged"]["black_lead"], abs=1e-3)
    # The trained weights (not the average), written as a model that the komi curve can play.
    from azjax.build import load_model

    _, written = load_model(data["trained_model_dir"])
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(written), jax.tree.leaves(params), strict=True))


def test_replay_fit_counts_games_since_each_entry_per_slot_across_the_devices_rings() -> None:
    fit = import_module("lab.sai_7x7.sai_replay_fit")
    # Two devices, each a ring of 8 entries over 2 slots: global entries 0-7 are device 0's (slots 0, 1), 8-15
    # device 1's (slots 2, 3).
    entry_game_id = np.array([4, 5, 3, 5, 0, 0, 0, 0, 7, 1, 6, 1, 0, 0, 0, 0])
    slot_game_id = np.array([6, 6, 8, 2])
    since = fit.games_since(np.array([0, 1, 2, 3, 8, 9, 10, 11]), entry_game_id, slot_game_id, 8, 2)
    assert since.tolist() == [1, 0, 2, 0, 0, 0, 1, 0]


def test_replay_fit_takes_only_empty_boards_with_their_results() -> None:
    fit = import_module("lab.sai_7x7.sai_replay_fit")
    empty = np.zeros((2, 3), bool)
    obs = np.zeros((5, 2, 3), bool)
    obs[1, 0, 0] = obs[4, 1, 2] = True
    has_target = np.array([True, True, False, True, True])
    assert fit.empty_board_entries(obs, has_target, empty).tolist() == [0, 3]
    assert fit.komi_table(np.array([7.5, 9.5, 7.5]), np.array([True, False, False])) == [
        dict(komi=7.5, entries=2, black_score=0.5), dict(komi=9.5, entries=1, black_score=0.0)]


def test_replay_fit_refuses_a_run_that_is_not_sai_in_one_line(tmp_path, monkeypatch) -> None:
    from azjax.checkpoint import save_config

    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # start_devices may add to it: undone after
    save_config(tmp_path / "run", Config(game="connect_four"))
    with pytest.raises(SystemExit, match="is not a SAI run"):
        import_module("lab.sai_7x7.sai_replay_fit").main([str(tmp_path / "run"), "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit, match="neither a run directory nor an exported model"):
        import_module("lab.sai_7x7.sai_replay_fit").main([str(tmp_path / "nothing"), "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "nothing").exists()
