"""Search: two-player signs and terminals on hand-built positions, illegal-move masking, move choice.

The evaluator is a constant one whose logits and value come from `params`, so one compiled search
serves every test (uniform zero-value, adversarial priors on an illegal move, a constant value).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax.build import search_spec
from azjax.config import Config
from azjax.games import Game, GameState, make_game
from azjax.search import (
    SearchSpec,
    choose_move,
    make_recurrent_fn,
    mask_logits,
    policy_value,
    root_fn,
    root_visit_counts,
    run_search,
    search_inputs,
)
from azjax.search.layout import search_moves, slot_of
from azjax.search.policies import gumbel_muzero_policy, muzero_policy

PUCT = SearchSpec(kind="puct", num_simulations=64, dirichlet_fraction=0.0)
# Gumbel's sequential halving gives each of 7 moves only ~3 visits in its first phase; a blunder is only
# seen to lose once the opponent's reply is found, so 128 simulations (~6 visits each) are used here.
GUMBEL = SearchSpec(kind="gumbel", num_simulations=128, gumbel_scale=1.0)
SPECS = {"puct": PUCT, "gumbel": GUMBEL}

# Connect Four, columns 1-7; the first player is X.
WIN = "1 7 2 7 3 6"  # X to move has 1-2-3 on the bottom row: column 4 wins
BLOCK = "7 1 7 2 6 3"  # O has 1-2-3: X must play column 4
FULL = "4 3 3 3 3 3 3"  # column 3 is full (O to move)
OVER = WIN + " 4"  # X has won
WIN_COL = BLOCK_COL = 3  # action index of column 4
FULL_COL = 2


def constant_evaluator(params: dict[str, jax.Array], states: GameState) -> tuple[jax.Array, jax.Array]:
    """Logits `params["logits"]` and value `params["value"]` for every state."""
    batch = states.legal_action_mask.shape[:-1]
    return jnp.broadcast_to(params["logits"], states.legal_action_mask.shape), jnp.full(batch, params["value"])


def params_for(game: Game, value: float = 0.0, logits: dict[int, float] | None = None) -> dict[str, jax.Array]:
    base = np.zeros(game.num_actions, np.float32)
    for action, logit in (logits or {}).items():
        base[action] = logit
    return {"logits": jnp.asarray(base), "value": jnp.float32(value)}


@pytest.fixture(scope="module")
def c4() -> Game:
    return make_game("connect_four")


@pytest.fixture(scope="module")
def search() -> Callable[..., mctx.PolicyOutput]:
    return jax.jit(run_search, static_argnums=(0, 1, 2))


def _position(game: Game, step: Callable[..., GameState], moves: str) -> GameState:
    state = game.init(jax.random.PRNGKey(0))
    for text in moves.split():
        assert not bool(state.terminated)
        state = step(state, game.parse_action(state, text))
    return state


@pytest.fixture(scope="module")
def roots(c4: Game) -> GameState:
    """[WIN, BLOCK, FULL, OVER] as one batch."""
    step = jax.jit(c4.step)
    states = [_position(c4, step, moves) for moves in (WIN, BLOCK, FULL, OVER)]
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    np.testing.assert_array_equal(batch.terminated, [False, False, False, True])
    assert not bool(batch.legal_action_mask[2, FULL_COL])
    return batch


@pytest.fixture(scope="module")
def outputs(c4: Game, roots: GameState, search: Callable[..., mctx.PolicyOutput]) -> dict[str, list[mctx.PolicyOutput]]:
    """Uniform zero-value searches, three keys per kind."""
    params = params_for(c4)
    return {
        kind: [search(spec, c4, constant_evaluator, params, jax.random.PRNGKey(seed), roots) for seed in range(3)]
        for kind, spec in SPECS.items()
    }


# ---------------------------------------------------------------- the recurrent function and the root


def test_recurrent_fn_signs_and_terminals(c4: Game, roots: GameState) -> None:
    recurrent = jax.jit(make_recurrent_fn(c4, constant_evaluator))
    params = params_for(c4, value=0.25)
    states = jax.tree.map(lambda x: x[jnp.array([0, 1, 3, 0])], roots)  # WIN, BLOCK, OVER, WIN
    actions = jnp.int32([WIN_COL, 0, 0, 0])  # the win; a quiet move; anything after the end; a quiet move
    out, after = recurrent(params, jax.random.PRNGKey(0), actions, states)
    np.testing.assert_array_equal(out.reward, [1.0, 0.0, 0.0, 0.0])  # +1 for the player who moved and won
    np.testing.assert_array_equal(out.discount, [0.0, -1.0, 0.0, -1.0])
    np.testing.assert_array_equal(out.value, [0.0, 0.25, 0.0, 0.25])  # evaluator's value for the side to move
    np.testing.assert_array_equal(after.terminated, [True, False, True, False])
    assert np.isfinite(np.asarray(out.prior_logits)).all()
    # The winner's reward as pgx reports it, for the record: mover +1, the other -1.
    mover = int(states.current_player[0])
    assert float(after.rewards[0, mover]) == 1.0 and float(after.rewards[0, 1 - mover]) == -1.0


@pytest.mark.slow
def test_with_twofold_draws_a_move_that_repeats_a_position_is_a_drawn_leaf_of_the_tree() -> None:
    """After g1f3 g8f6 f3g1 f6g8 g1f3 g8f6, White's f3g1 repeats a position: with the rule a draw in the tree
    (reward, value and discount 0); e2e4 stays a plain move. (Without the rule the tree steps with the game's own
    step, which plays on: tests/games/test_games.py.)"""
    chess = make_game("chess")
    state, step = chess.init(jax.random.PRNGKey(0)), jax.jit(chess.step)
    for move in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6"]:
        state = step(state, chess.parse_action(state, move))
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    actions = jnp.int32([chess.parse_action(state, "f3g1"), chess.parse_action(state, "e2e4")])
    slots = slot_of(search_moves(chess, states), actions)  # chess is searched over slots (azjax/search/layout.py)
    recurrent = jax.jit(make_recurrent_fn(chess, constant_evaluator, twofold_draws=True))
    out, after = recurrent(params_for(chess, value=0.25), jax.random.PRNGKey(0), slots, states)
    np.testing.assert_array_equal(out.discount, [0.0, -1.0])
    np.testing.assert_array_equal(out.value, [0.0, 0.25])
    np.testing.assert_array_equal(out.reward, [0.0, 0.0])
    np.testing.assert_array_equal(after.terminated, [True, False])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_a_finished_game_inside_the_tree_grows_no_chain_and_changes_no_real_statistic(c4: Game, roots: GameState,
                                                                                     kind: str) -> None:
    """mctx expands below finished games; there the priors are uniform. The evaluator here always prefers
    column 4, which wins from WIN: with the evaluator's own priors below the win, PUCT descends one chain
    deeper on every visit. The real positions' statistics must not depend on which it is."""
    params = params_for(c4, value=0.0, logits={WIN_COL: 8.0})
    win = jax.tree.map(lambda x: x[:1], roots)
    uniform_below_the_end = make_recurrent_fn(c4, constant_evaluator)

    def evaluators_priors_below_the_end(params: Any, key: jax.Array, action: jax.Array, states: GameState):
        out, states = uniform_below_the_end(params, key, action, states)
        logits, _ = constant_evaluator(params, states)
        return out.replace(prior_logits=mask_logits(logits, states.legal_action_mask)), states

    def tree(recurrent_fn: mctx.RecurrentFn) -> mctx.Tree:
        root = root_fn(c4, constant_evaluator, params, win)
        policy = muzero_policy if kind == "puct" else gumbel_muzero_policy
        kw = dict(dirichlet_fraction=0.0) if kind == "puct" else {}
        return policy(params, jax.random.PRNGKey(0), root, recurrent_fn, 64, ~win.legal_action_mask, **kw).search_tree

    ours, chain = tree(uniform_below_the_end), tree(evaluators_priors_below_the_end)
    real = np.asarray(~ours.embeddings.terminated[0])  # the nodes that are real positions (same in both trees)
    for field in ("children_visits", "children_values", "node_values", "node_visits"):
        np.testing.assert_array_equal(np.asarray(getattr(ours, field))[0][real],
                                      np.asarray(getattr(chain, field))[0][np.asarray(~chain.embeddings.terminated[0])])
    assert int(ours.summary().visit_counts[0, WIN_COL]) > 1  # the finished game is in the tree, visited again

    def finished_depth(t: mctx.Tree) -> int:  # the most finished positions in a row on a path from the root
        parents, finished = np.asarray(t.parents[0]), np.asarray(t.embeddings.terminated[0])
        run = np.zeros(len(parents), int)
        for n in range(1, len(parents)):
            run[n] = run[parents[n]] + 1 if parents[n] >= 0 and finished[n] else 0
        return int(run.max())

    if kind == "puct":
        assert finished_depth(chain) > 16  # the evaluator's priors below the win: one ever-deeper chain
    assert finished_depth(ours) <= 4  # uniform priors: 64 visits below the win spread 7 ways, about 3 levels


def test_root_fn_and_mask_logits(c4: Game, roots: GameState) -> None:
    params = params_for(c4, value=0.5, logits={FULL_COL: 30.0, 0: 2.0})
    root = root_fn(c4, constant_evaluator, params, roots)
    np.testing.assert_array_equal(root.value, [0.5, 0.5, 0.5, 0.0])  # a finished game is worth 0
    probs = np.asarray(jax.nn.softmax(root.prior_logits, axis=-1))
    assert probs[2, FULL_COL] == 0.0
    np.testing.assert_allclose(probs[2].sum(), 1.0, rtol=1e-6)
    assert probs[2, 0] > probs[2, 1]

    logits = jnp.float32([[1.0, 5.0, 3.0], [-2.0, 0.0, 100.0]])
    legal = jnp.bool_([[True, False, True], [True, True, False]])
    masked = np.asarray(mask_logits(logits, legal))
    np.testing.assert_allclose(masked[0, 2] - masked[0, 0], 2.0)
    np.testing.assert_allclose(masked[1, 1] - masked[1, 0], 2.0)
    assert masked[0, 1] == masked[1, 2] == np.finfo(np.float32).min
    assert np.asarray(jax.nn.softmax(mask_logits(logits, legal))[~np.asarray(legal)]).max() == 0.0


# ---------------------------------------------------------------- whole searches


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_search_takes_the_win(outputs: dict[str, list[mctx.PolicyOutput]], kind: str) -> None:
    for out in outputs[kind]:
        visits = np.asarray(root_visit_counts(out))[0]
        qvalues = np.asarray(out.search_tree.summary().qvalues)[0]
        assert visits[WIN_COL] == visits.max(), visits
        assert int(np.argmax(out.action_weights[0])) == WIN_COL
        assert qvalues[WIN_COL] == pytest.approx(1.0)  # reward +1 for the mover, nothing after it
        if kind == "puct":
            assert visits[WIN_COL] >= 0.75 * visits.sum(), visits
        else:
            assert int(out.action[0]) == WIN_COL
            assert float(out.action_weights[0, WIN_COL]) > 0.9


def test_the_policy_value_weighs_visited_root_moves_by_the_policy_and_falls_back_to_the_root_mean() -> None:
    from types import SimpleNamespace

    tree = SimpleNamespace(
        children_visits=jnp.array([[[3, 1, 0, 2]], [[0, 0, 0, 0]]]),
        children_rewards=jnp.array([[[1.0, 0.0, 0.0, 0.0]], [[0.0] * 4]]),
        children_discounts=jnp.full((2, 1, 4), -1.0),
        children_values=jnp.array([[[0.0, 0.5, 0.9, -0.2]], [[0.0] * 4]]),  # Q = 1, -0.5, (unvisited), 0.2
        node_values=jnp.array([[0.3, 0.0], [-0.7, 0.0]]),
    )
    policy = jnp.array([[0.4, 0.2, 0.3, 0.1], [0.25] * 4])
    # root 0: (0.4 x 1 + 0.2 x -0.5 + 0.1 x 0.2) / 0.7, the unvisited move's weight left out; root 1: no visits
    np.testing.assert_allclose(policy_value(tree, policy), [0.32 / 0.7, -0.7], rtol=1e-6)


def test_under_gumbel_the_policy_value_of_a_won_root_is_the_win_and_the_root_mean_is_far_below_it(
        c4: Game, roots: GameState, search: Callable[..., mctx.PolicyOutput]) -> None:
    """Self-play's 16 simulations from a root won in one move, with a network that knows nothing: sequential
    halving spreads visits over all seven moves, so the root's mean value is pulled down by the six that do
    not win, while the improved policy's value is the win's."""
    spec = SearchSpec(kind="gumbel", num_simulations=16, gumbel_scale=1.0)
    out = search(spec, c4, constant_evaluator, params_for(c4), jax.random.PRNGKey(0), roots)
    assert float(policy_value(out.search_tree, out.action_weights)[0]) > 0.95
    assert float(out.search_tree.node_values[0, 0]) < 0.5


def test_under_puct_the_policy_value_of_the_visit_distribution_is_the_root_mean_without_the_roots_own_value(
        outputs: dict[str, list[mctx.PolicyOutput]]) -> None:
    for out in outputs["puct"]:
        tree, live = out.search_tree, np.array([True, True, True, False])  # the finished game has no children
        n = np.asarray(root_visit_counts(out)).sum(axis=-1)
        want = (np.asarray(tree.node_values[:, 0]) * (n + 1) - np.asarray(tree.raw_values[:, 0])) / np.maximum(n, 1)
        np.testing.assert_allclose(np.asarray(policy_value(tree, out.action_weights))[live], want[live], atol=1e-5)


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_search_blocks_the_threat(outputs: dict[str, list[mctx.PolicyOutput]], kind: str) -> None:
    for out in outputs[kind]:
        visits = np.asarray(root_visit_counts(out))[1]
        qvalues = np.asarray(out.search_tree.summary().qvalues)[1]
        assert visits[BLOCK_COL] == visits.max(), visits
        assert int(np.argmax(out.action_weights[1])) == BLOCK_COL
        others = np.delete(qvalues, BLOCK_COL)
        assert qvalues[BLOCK_COL] > others.max(), qvalues  # every other move lets O win
        assert others.min() < -0.3, qvalues
        if kind == "puct":
            assert visits[BLOCK_COL] >= 0.4 * visits.sum(), visits
        else:
            assert int(out.action[1]) == BLOCK_COL


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_terminal_root_and_no_illegal_visits(
    c4: Game, roots: GameState, search: Callable[..., mctx.PolicyOutput], kind: str
) -> None:
    """A finished game as root runs (its result is unused); an illegal move gets no visit anywhere in the
    tree, even when the evaluator's prior favours it overwhelmingly."""
    params = params_for(c4, logits={FULL_COL: 30.0})
    out = search(SPECS[kind], c4, constant_evaluator, params, jax.random.PRNGKey(7), roots)
    assert np.isfinite(np.asarray(out.action_weights)).all()
    assert np.asarray(root_visit_counts(out))[3].sum() == SPECS[kind].num_simulations  # the finished root
    tree = out.search_tree
    visited = np.asarray(tree.node_visits) > 0  # [B, nodes]
    legal = np.asarray(tree.embeddings.legal_action_mask)  # [B, nodes, A]
    over = np.asarray(tree.embeddings.terminated)
    child_visits = np.asarray(tree.children_visits)
    illegal = visited[..., None] & ~legal & ~over[..., None]
    assert illegal[:3].any()  # the full column shows up in the trees
    assert child_visits[illegal].sum() == 0
    assert np.asarray(root_visit_counts(out))[2, FULL_COL] == 0
    assert float(out.action_weights[2, FULL_COL]) == 0.0


def test_go_terminal_reward_follows_each_games_komi() -> None:
    """Go 7x7, Black leads by 7 on the board and has just passed: White's pass ends the game, a win for
    White with komi 9.5 and a loss with komi 5.5. The recurrent function must score each game with its
    own komi and credit the result to the mover (White). (A whole Go search is left out: it compiles
    for over 30 s on 2 cores.)"""
    game = make_game("go_7x7")
    recurrent = jax.jit(make_recurrent_fn(game, constant_evaluator))
    params = params_for(game, value=0.5)
    states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 2), jnp.float32([9.5, 5.5]))
    pass_action = game.num_actions - 1
    moves = [m for r in range(1, 8) for m in (f"D{r}", f"E{r}")] + ["pass"]
    for text in moves:
        action = game.parse_action(jax.tree.map(lambda x: x[0], states), text)
        out, states = recurrent(params, jax.random.PRNGKey(0), jnp.full(2, action, jnp.int32), states)
        np.testing.assert_array_equal(out.reward, 0.0)
        np.testing.assert_array_equal(out.discount, -1.0)
        np.testing.assert_array_equal(out.value, 0.5)
    assert int(game.color_to_move(jax.tree.map(lambda x: x[0], states))) == 1  # White
    out, after = recurrent(params, jax.random.PRNGKey(0), jnp.full(2, pass_action, jnp.int32), states)
    np.testing.assert_array_equal(out.reward, [1.0, -1.0])
    np.testing.assert_array_equal(out.discount, [0.0, 0.0])
    np.testing.assert_array_equal(out.value, [0.0, 0.0])
    assert np.asarray(after.terminated).all()


# ---------------------------------------------------------------- choosing the move


def test_choose_move_puct_plays_most_visited_outside_the_window_and_samples_visits_inside(
        outputs: dict[str, list[mctx.PolicyOutput]]) -> None:
    """Greedy without exploration; with it, samples pi ~ N (tau = 1): over 4000 draws each empirical
    frequency is within 0.03 of N(a)/sum N (the standard error is at most 0.008, so ~4 sigma)."""
    out = outputs["puct"][0]
    visits = np.asarray(root_visit_counts(out))
    batch = visits.shape[0]
    greedy = choose_move(PUCT, jax.random.PRNGKey(0), out, jnp.zeros(batch, bool))
    np.testing.assert_array_equal(greedy, visits.argmax(-1))

    draws = 4000
    sample = jax.jit(jax.vmap(lambda key: choose_move(PUCT, key, out, jnp.ones(batch, bool))))
    actions = np.asarray(sample(jax.random.split(jax.random.PRNGKey(1), draws)))  # [draws, B]
    for b in range(batch - 1):  # the last root is a finished game
        freq = np.bincount(actions[:, b], minlength=visits.shape[1]) / draws
        np.testing.assert_allclose(freq, visits[b] / visits[b].sum(), atol=0.03)
        assert (freq[visits[b] == 0] == 0).all()

    mixed = choose_move(PUCT, jax.random.PRNGKey(2), out, jnp.array([False, True, False, True]))
    assert int(mixed[0]) == visits[0].argmax() and int(mixed[2]) == visits[2].argmax()
    assert mixed.dtype == jnp.int32


def test_choose_move_temperature_sharpens_the_policy_target() -> None:
    """pi^(1/tau): tau = 0.5 squares the target's weights (renormalised); tau = 0 is the search's choice;
    moves without weight are never drawn."""
    weights = jnp.array([[0.0, 0.6, 0.2, 0.2]])
    out = mctx.PolicyOutput(action=jnp.array([2]), action_weights=weights, search_tree=None)
    keys = jax.random.split(jax.random.key(1), 4000)
    draws = np.asarray(jax.vmap(lambda k: choose_move(GUMBEL, k, out, jnp.ones(1, bool), 0.5))(keys))[:, 0]
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / 4000, [0, 0.36 / 0.44, 0.04 / 0.44, 0.04 / 0.44],
                               atol=0.03)
    greedy = jax.vmap(lambda k: choose_move(GUMBEL, k, out, jnp.ones(1, bool), 0.0))(keys[:50])
    assert (np.asarray(greedy) == 2).all()  # Gumbel's own choice, not the argmax of its improved policy


def test_choose_move_gumbel_plays_the_sequential_halving_winner_after_the_window(
        outputs: dict[str, list[mctx.PolicyOutput]]) -> None:
    out = outputs["gumbel"][1]
    batch = out.action.shape[0]
    greedy = choose_move(GUMBEL, jax.random.PRNGKey(0), out, jnp.zeros(batch, bool))
    np.testing.assert_array_equal(greedy, out.action)
    assert int(greedy[0]) == WIN_COL and int(greedy[1]) == BLOCK_COL
    explored = jax.vmap(lambda k: choose_move(GUMBEL, k, out, jnp.ones(batch, bool)))(
        jax.random.split(jax.random.PRNGKey(3), 200))
    weights = np.asarray(out.action_weights)
    for b in range(batch - 1):
        assert (weights[b, np.asarray(explored)[:, b]] > 0).all()  # drawn from the improved policy
    with pytest.raises(AssertionError):  # chex: `explore` must be [B]
        choose_move(GUMBEL, jax.random.PRNGKey(0), out, jnp.ones((batch, 1), bool))


def test_gumbel_greedy_moves_were_all_visited_where_the_improved_policy_argmax_was_not() -> None:
    """With few simulations most legal Go moves stay unvisited and tie in Gumbel's improved policy; the
    chosen move must always be one the search visited (the argmax of the improved policy often is not)."""
    game = make_game("go_9x9")
    states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 64))
    spec = SearchSpec(kind="gumbel", num_simulations=4, max_num_considered_actions=4, gumbel_scale=1.0)
    params = params_for(game, value=0.0)
    out = jax.jit(run_search, static_argnums=(0, 1, 2))(spec, game, constant_evaluator, params,
                                                         jax.random.PRNGKey(1), states)
    visits = np.asarray(root_visit_counts(out))
    chosen = np.asarray(choose_move(spec, jax.random.PRNGKey(2), out, jnp.zeros(64, bool)))
    assert (visits[np.arange(64), chosen] > 0).all()
    argmax = np.asarray(out.action_weights).argmax(-1)
    assert (visits[np.arange(64), argmax] == 0).any()  # the trap the chooser avoids


def test_search_spec_from_config() -> None:
    config = Config(search="puct", num_simulations=48, dirichlet_fraction=0.3, gumbel_scale=0.7)
    train = search_spec(config, training=True)
    assert not train.twofold_draws
    assert search_spec(Config(game="chess", twofold_draws=True), training=False).twofold_draws
    evaluate = search_spec(config, training=False, num_simulations=16)
    assert (train.kind, train.num_simulations, train.dirichlet_fraction, train.gumbel_scale) == ("puct", 48, 0.3, 0.7)
    assert (evaluate.num_simulations, evaluate.dirichlet_fraction, evaluate.gumbel_scale) == (16, 0.0, 0.0)
    assert hash(train) != hash(evaluate)
    _: Any = {train: 1}  # hashable, so jit can take it as a static argument


def test_gumbels_sigma_at_the_default_c_visit_and_c_scale_is_mctxs_own(
        c4: Game, roots: GameState, search: Callable[..., mctx.PolicyOutput]) -> None:
    params, key = params_for(c4, logits={0: 1.0, 5: -1.0}), jax.random.PRNGKey(3)
    ours = search(GUMBEL, c4, constant_evaluator, params, key, roots)

    @jax.jit
    def with_mctxs_default(params: dict[str, jax.Array], key: jax.Array, roots: GameState) -> mctx.PolicyOutput:
        root, recurrent_fn, invalid = search_inputs(c4, constant_evaluator, params, roots)
        return gumbel_muzero_policy(params, key, root, recurrent_fn, GUMBEL.num_simulations, invalid,
                                    qtransform=mctx.qtransform_completed_by_mix_value)

    theirs = with_mctxs_default(params, key, roots)
    assert np.asarray(ours.action_weights).tobytes() == np.asarray(theirs.action_weights).tobytes()
    assert np.asarray(ours.action).tobytes() == np.asarray(theirs.action).tobytes()


def test_gumbels_c_scale_sets_how_far_the_improved_policy_leans_from_the_prior_to_the_searched_win(
        c4: Game, roots: GameState, search: Callable[..., mctx.PolicyOutput]) -> None:
    params, key = params_for(c4, logits={0: 2.0}), jax.random.PRNGKey(0)  # the prior prefers column 1, not the win
    weights = {c: np.asarray(search(dataclasses.replace(GUMBEL, gumbel_c_scale=c), c4, constant_evaluator, params, key,
                                    roots).action_weights[0]) for c in (0.0, 0.02, 0.1)}
    prior = np.asarray(jax.nn.softmax(mask_logits(params["logits"][None], roots.legal_action_mask[:1])))[0]
    np.testing.assert_allclose(weights[0.0], prior, rtol=1e-6)  # sigma = 0: the target is the prior
    assert weights[0.0][WIN_COL] < weights[0.02][WIN_COL] < weights[0.1][WIN_COL]
    assert search_spec(Config(gumbel_c_visit=10, gumbel_c_scale=0.03), training=True).gumbel_c_scale == 0.03


def test_eval_search_changes_only_the_players_search() -> None:
    config = Config(search="gumbel", eval_search="puct")
    assert search_spec(config, training=True).kind == "gumbel"  # self-play keeps its search
    assert search_spec(config, training=False).kind == "puct"
    assert search_spec(config.replace(eval_search="same"), training=False).kind == "gumbel"
    with pytest.raises(ValueError, match="eval_search must be one of"):
        Config(eval_search="alphabeta")


def test_the_players_gumbel_root_settings_change_only_the_players_search() -> None:
    config = Config(max_num_considered_actions=16, gumbel_c_scale=0.1)
    player = config.replace(eval_max_num_considered_actions=64, eval_gumbel_c_scale=1.0)
    assert search_spec(player, training=True) == search_spec(config, training=True)  # self-play keeps its root
    spec = search_spec(player, training=False)
    assert (spec.max_num_considered_actions, spec.gumbel_c_scale) == (64, 1.0)
    assert search_spec(config, training=False) == search_spec(config.replace(eval_max_num_considered_actions=0,
                                                                             eval_gumbel_c_scale=0.0), training=False)
    assert search_spec(config, training=False).max_num_considered_actions == 16  # 0: the self-play root's
    for field in ("eval_max_num_considered_actions", "eval_gumbel_c_scale"):
        with pytest.raises(ValueError, match=f"{field} must be >= 0"):
            Config(**{field: -1})
