"""KataGo's score utility (azjax.methods.score_utility): a node's value gains KataGo's atan bonus for the score lead
its score head predicts over the root's, seen from its own side; values stay within the terminal rewards; the
search then plays for points where the value head sees no difference; a parent-aware head (SAI's sensible agent)
keeps its own context; the command line, the arena and GTP switch it; off (the default) is AlphaZero."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.build import board_game, load_model, make_evaluator, value_head
from azjax.cli import main
from azjax.config import Config, preset
from azjax.engines.loading import start_engine
from azjax.games import make_game
from azjax.methods import sai
from azjax.methods.alphazero import TanhValue, ValueHeadWrapper
from azjax.methods.score_utility import KATAGO_FACTOR, KATAGO_SCALE, ScoreUtilityValue, score_utility
from azjax.play.specs import parse_agent
from azjax.search import ParentAwareEvaluator, SearchSpec, run_search
from azjax.train import load_metrics

ROOT = Path(__file__).resolve().parents[2]
ON = dict(score_loss_weight=0.1, score_utility_factor=0.3)


class States:
    """What the evaluators read of a batch of positions: its observations [B, H, W, C]."""

    def __init__(self, observation: jax.Array) -> None:
        self.observation = observation


def test_the_bonus_grows_with_the_lead_over_the_centre_and_keeps_values_within_the_terminal_rewards():
    value = jnp.array([0.0, 0.0, 0.0, 1.0, -1.0, 0.5])
    score = jnp.array([0.0, 10.0, -10.0, 1e6, -1e6, 3.0])
    centre = jnp.array([0.0, 0.0, 0.0, 0.0, 0.0, 3.0])
    got = np.asarray(score_utility(value, score, centre, 49, KATAGO_FACTOR, KATAGO_SCALE))
    assert got[0] == 0.0 and got[1] > 0 > got[2] and got[1] == -got[2]
    assert -1.0 <= got[4] < got[3] <= 1.0  # a won position with any lead is worth no more than a won game
    np.testing.assert_allclose(got[5], 0.5 / 1.3, rtol=1e-6)  # no lead over the centre: the value, scaled
    x = 10.0 / (0.75 * 7.0)
    np.testing.assert_allclose(got[1], 0.3 * (2 / np.pi) * np.arctan(x) / 1.3, rtol=1e-6)
    assert np.asarray(score_utility(value, score, centre, 49, 0.0, KATAGO_SCALE)).tolist() == value.tolist()


def test_a_node_is_judged_by_its_lead_over_the_roots_seen_from_its_own_side():
    """A fake network whose score is the observation's number and whose value is 0.2: the root's centre is its own
    score; a child's is the root's negated, a grandchild's the root's again."""

    def fake_apply(params: Any, obs: jax.Array) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        return (jnp.zeros((obs.shape[0], 3)), jnp.full((obs.shape[0],), 0.2)), obs[:, 0, 0, 0]

    evaluate = ScoreUtilityValue(inner=TanhValue(), score_apply=lambda apply_fn: fake_apply).evaluator(None)
    assert isinstance(evaluate, ParentAwareEvaluator)

    def states(scores: list[float]) -> States:
        return States(jnp.broadcast_to(jnp.array(scores)[:, None, None, None], (len(scores), 3, 3, 1)))

    _, root_value, context = evaluate.root(None, states([5.0, -2.0]))
    np.testing.assert_allclose(root_value, [0.2 / 1.3] * 2, rtol=1e-6)
    np.testing.assert_array_equal(context.centre, [5.0, -2.0])
    _, child_value, child = evaluate.child(None, states([-5.0, 0.0]), context)
    np.testing.assert_array_equal(child.centre, [-5.0, 2.0])
    np.testing.assert_allclose(child_value, score_utility(jnp.full(2, 0.2), jnp.array([-5.0, 0.0]),
                                                          jnp.array([-5.0, 2.0]), 9, 0.3, 0.75), rtol=1e-6)
    assert child_value[0] == pytest.approx(0.2 / 1.3) and child_value[1] < 0.2 / 1.3  # 2 points behind the root
    _, _, grandchild = evaluate.child(None, states([0.0, 0.0]), child)
    np.testing.assert_array_equal(grandchild.centre, [5.0, -2.0])
    # factor 0: the search reads the inner head alone
    off = ScoreUtilityValue(inner=TanhValue(), score_apply=lambda apply_fn: fake_apply, factor=0.0)
    assert not isinstance(off.evaluator(lambda p, o: o), ParentAwareEvaluator)


@dataclasses.dataclass(frozen=True)
class DepthValue(ValueHeadWrapper):
    """A parent-aware value head whose value is 0.1 a ply below the root and whose context is that depth."""

    def evaluator(self, apply_fn: Any) -> ParentAwareEvaluator:
        def root(params: Any, states: Any) -> tuple[jax.Array, jax.Array, jax.Array]:
            logits, _ = apply_fn(params, states.observation)
            depth = jnp.zeros(states.observation.shape[0])
            return logits, depth, depth

        def child(params: Any, states: Any, depth: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
            logits, _ = apply_fn(params, states.observation)
            return logits, 0.1 * (depth + 1), depth + 1

        return ParentAwareEvaluator(root=root, child=child)


def test_a_parent_aware_head_keeps_its_own_context_beside_the_centre():
    def fake_apply(params: Any, obs: jax.Array) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        return (jnp.zeros((obs.shape[0], 3)), jnp.zeros(obs.shape[0])), jnp.zeros(obs.shape[0])

    evaluate = ScoreUtilityValue(inner=DepthValue(TanhValue()), score_apply=lambda apply_fn: fake_apply).evaluator(None)
    observation = States(jnp.zeros((2, 3, 3, 1)))
    _, _, context = evaluate.root(None, observation)
    _, value, context = evaluate.child(None, observation, context)
    _, value, context = evaluate.child(None, observation, context)
    np.testing.assert_array_equal(context.inner, [2.0, 2.0])
    np.testing.assert_allclose(value, [0.2 / 1.3] * 2, rtol=1e-6)


def test_the_search_plays_for_points_where_the_value_head_sees_none():
    """Connect Four with a network that sees every position even and every move alike, and whose score head counts
    a stone in column 4 as 10 points for its owner: with the utility the search plays column 4 from every key;
    without it, the moves are the search's noise."""
    game = make_game("connect_four")

    def fake_apply(params: Any, obs: jax.Array) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        column_4 = obs[:, :, 3, 0].sum(axis=1) - obs[:, :, 3, 1].sum(axis=1)  # the player to move's minus the other's
        return (jnp.zeros((obs.shape[0], 7)), jnp.zeros(obs.shape[0])), 10.0 * column_4

    spec = SearchSpec(kind="gumbel", num_simulations=16, max_num_considered_actions=7)
    roots = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 8))

    def moves(factor: float) -> np.ndarray:
        value = ScoreUtilityValue(inner=TanhValue(), score_apply=lambda apply_fn: fake_apply, factor=factor)
        evaluate = value.evaluator(lambda p, o: fake_apply(p, o)[0])
        search = jax.jit(lambda key: run_search(spec, game, evaluate, None, key, roots).action)
        return np.asarray(search(jax.random.key(1)))

    np.testing.assert_array_equal(moves(0.3), [3] * 8)
    assert (moves(0.0) != 3).any()


def test_off_by_default_alphazero_and_on_it_wraps_any_value_head():
    assert Config().score_utility_factor == 0.0
    old = Config(game="go_7x7").to_dict()
    for name in ("score_utility_factor", "score_utility_scale"):
        del old[name]
    assert Config.from_dict(old).score_utility_factor == 0.0  # saved before the utility existed: off
    assert type(value_head(preset("go_7x7", score_loss_weight=0.1))) is TanhValue
    on = value_head(preset("go_7x7", **ON))
    assert isinstance(on, ScoreUtilityValue) and type(on.inner) is TanhValue and on.factor == 0.3
    with_sai = value_head(preset("go_7x7", **ON, value_head="sai", sensible_lambda=0.5))
    assert isinstance(with_sai, ScoreUtilityValue) and isinstance(with_sai.inner, sai.SigmoidKomiValue)


@pytest.mark.parametrize("changes, field", [
    (dict(score_utility_factor=-0.1), "score_utility_factor"),
    (dict(score_utility_factor=1.5), "score_utility_factor"),
    (dict(score_utility_scale=0.0), "score_utility_scale"),
    (dict(game="go_7x7", score_utility_factor=0.3), "score_utility_factor"),  # no score head
])
def test_bad_settings_are_refused_in_one_line_naming_the_field(changes: dict[str, Any], field: str):
    with pytest.raises(ValueError, match=field) as info:
        Config(**changes)
    assert "\n" not in str(info.value)


def test_the_arena_and_gtp_switch_it_on_a_committed_network_with_a_score_head():
    model = str(ROOT / "results" / "models" / "go_7x7_pooled")
    player, game = parse_agent(f"{model}:8:score_utility=0.3", None, simulations=8)
    assert game == "go_7x7" and player.overrides == {"score_utility_factor": 0.3}
    assert player.name.endswith(":8:score_utility=0.3")
    with pytest.raises(ValueError, match="score_utility needs a number in"):
        parse_agent(f"{model}:8:score_utility=2", None, simulations=8)
    args = argparse.Namespace(checkpoint=model, visits=8, n_scl=None, search=None, seed=0, sensible_lambda=None,
                              score_utility_factor=0.3)
    engine = start_engine(args, "gtp").get()
    assert engine.config.score_utility_factor == 0.3 and isinstance(engine.evaluate, ParentAwareEvaluator)
    args.checkpoint = str(ROOT / "results" / "models" / "connect_four_hour")  # no score head: refused at once
    with pytest.raises(ValueError, match="score_utility_factor needs KataGo's score head"):
        start_engine(args, "gtp")


@pytest.mark.slow
def test_a_tiny_go_loop_searches_with_the_utility_from_the_command_line(tmp_path):
    """`--score_utility_factor 0.3` on 7x7 Go trains, and the saved model's search values carry the bonus."""
    tiny = ["--num_envs", "4", "--num_simulations", "4", "--moves_per_step", "8", "--replay_size", "128",
            "--min_replay_size", "8", "--batch_size", "8", "--num_blocks", "1", "--num_channels", "8",
            "--eval_every", "0", "--checkpoint_every", "2", "--lr_warmup_steps", "1", "--num_steps", "2",
            "--sgd_steps_per_step", "1", "--score_loss_weight", "0.1", "--score_utility_factor", "0.3"]
    run = tmp_path / "run"
    assert main(["train", "--game", "go_7x7", "--run_dir", str(run), "--no-progress", *tiny]) == 0
    rows, _ = load_metrics(run)
    assert len(rows) == 2 and all(np.isfinite(r["score_loss"]) for r in rows if r["sgd_applied"])
    config, params = load_model(run)
    assert config.score_utility_factor == 0.3
    evaluate = make_evaluator(config, board_game(config))
    assert isinstance(evaluate, ParentAwareEvaluator)
    roots = jax.vmap(board_game(config).init)(jax.random.split(jax.random.key(0), 2))
    _, value, context = evaluate.root(params, roots)
    assert np.all(np.abs(np.asarray(value)) <= 1 / 1.3) and context.centre.shape == (2,)
