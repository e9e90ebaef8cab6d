"""KnightCap's material start (azjax.methods.material_prior): the search reads the value head blended with each
node's material lead from its own side; a search with a network that knows nothing takes a hanging queen with it
and not without; a parent-aware head keeps its context; the command line and the arena switch it; off (the
default) is AlphaZero."""

from __future__ import annotations

import argparse
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
from azjax.methods.alphazero import TanhValue
from azjax.methods.material_prior import MaterialPriorValue, material_prior
from azjax.methods.wdl import WinDrawLossValue
from azjax.play.specs import parse_agent
from azjax.search import ParentAwareEvaluator, SearchSpec, run_search
from azjax.train import load_metrics

ROOT = Path(__file__).resolve().parents[2]
# White to move, Black's queen hangs on d5 to the knight on c3 (and nothing else is attacked).
HANGING_QUEEN = "4k3/8/8/3q4/8/2N5/8/4K3 w - - 0 1"
NUM_ACTIONS = 4672


def states_of(*fens: str) -> Any:
    game = make_game("chess")
    return jax.tree.map(lambda *x: jnp.stack(x), *[game.start_position(fen=f) for f in fens])


def blank_network(params: Any, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A network that has learnt nothing: every move alike, every position even."""
    return jnp.zeros((obs.shape[0], NUM_ACTIONS)), jnp.zeros(obs.shape[0])


def test_the_blend_moves_the_value_toward_the_material_count_by_its_weight():
    value = jnp.array([0.5, 0.5, -1.0])
    material = jnp.array([0.0, 4.0, 9.0])
    np.testing.assert_allclose(material_prior(value, material, 0.5, 4.0),
                               [0.25, 0.25 + 0.5 * np.tanh(1.0), -0.5 + 0.5 * np.tanh(2.25)], rtol=1e-6, atol=1e-7)
    assert np.asarray(material_prior(value, material, 0.0, 4.0)).tolist() == value.tolist()
    assert np.all(np.abs(np.asarray(material_prior(jnp.ones(3), material * 100, 1.0, 4.0))) <= 1.0)


def test_a_node_is_valued_by_the_material_of_its_own_player_to_move():
    evaluate = MaterialPriorValue(inner=TanhValue(), weight=1.0, scale=4.0).evaluator(blank_network)
    white_up_a_rook = "4k3/8/8/8/8/8/8/R3K3 {} - - 0 1"
    _, value = evaluate(None, states_of(white_up_a_rook.format("w"), white_up_a_rook.format("b"),
                                        "4k3/8/8/8/8/8/8/4K3 w - - 0 1"))
    np.testing.assert_allclose(value, [np.tanh(5 / 4), -np.tanh(5 / 4), 0.0], rtol=1e-6)


def test_a_search_that_knows_nothing_takes_the_hanging_queen_with_the_prior_and_not_without():
    game = make_game("chess")
    spec = SearchSpec(kind="gumbel", num_simulations=32, max_num_considered_actions=16)
    roots = states_of(*[HANGING_QUEEN] * 4)
    capture = game.parse_action(game.start_position(fen=HANGING_QUEEN), "c3d5")

    def moves(weight: float) -> np.ndarray:
        evaluate = MaterialPriorValue(inner=TanhValue(), weight=weight).evaluator(blank_network)
        search = jax.jit(lambda key: run_search(spec, game, evaluate, None, key, roots).action)
        return np.asarray(search(jax.random.key(1)))

    np.testing.assert_array_equal(moves(0.5), [capture] * 4)
    assert (moves(0.0) != capture).any()


def test_a_parent_aware_head_keeps_its_context():
    def root(params: Any, states: Any) -> tuple[jax.Array, jax.Array, jax.Array]:
        logits, value = blank_network(params, states.observation)
        return logits, value, jnp.zeros(value.shape)

    def child(params: Any, states: Any, parent: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        logits, value = blank_network(params, states.observation)
        return logits, value, parent + 1

    class ParentAware(TanhValue):
        def evaluator(self, apply_fn: Any) -> ParentAwareEvaluator:
            return ParentAwareEvaluator(root=root, child=child)

    evaluate = MaterialPriorValue(inner=ParentAware(), weight=1.0).evaluator(blank_network)
    assert isinstance(evaluate, ParentAwareEvaluator)
    states = states_of(HANGING_QUEEN)
    _, value, context = evaluate.root(None, states)
    _, _, context = evaluate.child(None, states, context)
    np.testing.assert_allclose(value, [-np.tanh(6 / 4)], rtol=1e-6)  # White: a knight against a queen
    np.testing.assert_array_equal(context, [1.0])


def test_off_by_default_alphazero_and_on_it_wraps_the_value_head():
    assert Config().material_prior_weight == 0.0
    old = Config(game="chess").to_dict()
    for name in ("material_prior_weight", "material_prior_scale"):
        del old[name]
    assert Config.from_dict(old).material_prior_weight == 0.0  # saved before the prior existed: off
    assert type(value_head(preset("chess", value_head="wdl"))) is WinDrawLossValue
    on = value_head(preset("chess", value_head="wdl", material_prior_weight=0.5, material_prior_scale=3.0))
    assert isinstance(on, MaterialPriorValue) and type(on.inner) is WinDrawLossValue
    assert (on.weight, on.scale) == (0.5, 3.0)


@pytest.mark.parametrize("changes, field", [
    (dict(game="chess", material_prior_weight=-0.1), "material_prior_weight"),
    (dict(game="chess", material_prior_weight=1.5), "material_prior_weight"),
    (dict(game="chess", material_prior_scale=0.0), "material_prior_scale"),
    (dict(game="go_7x7", material_prior_weight=0.5), "material_prior_weight"),  # chess only
])
def test_bad_settings_are_refused_in_one_line_naming_the_field(changes: dict[str, Any], field: str):
    with pytest.raises(ValueError, match=field) as info:
        Config(**changes)
    assert "\n" not in str(info.value)


def test_the_arena_and_uci_switch_it_on_a_committed_chess_network():
    model = str(ROOT / "results" / "models" / "chess_hour")
    player, game = parse_agent(f"{model}:8:material_prior=0.5", None, simulations=8)
    assert game == "chess" and player.overrides == {"material_prior_weight": 0.5}
    assert player.name.endswith(":8:material_prior=0.5")
    with pytest.raises(ValueError, match="material_prior needs a number in"):
        parse_agent(f"{model}:8:material_prior=2", None, simulations=8)
    args = argparse.Namespace(checkpoint=model, visits=8, n_scl=None, search=None, seed=0, material_prior_weight=0.5)
    engine = start_engine(args, "uci").get()
    assert engine.config.material_prior_weight == 0.5
    _, value = engine.evaluate(engine.params, states_of(HANGING_QUEEN))
    _, plain = make_evaluator(engine.config.replace(material_prior_weight=0.0), board_game(engine.config))(
        engine.params, states_of(HANGING_QUEEN))
    np.testing.assert_allclose(value, 0.5 * np.asarray(plain) - 0.5 * np.tanh(6 / 4), atol=1e-6)


@pytest.mark.slow
def test_a_tiny_chess_loop_searches_with_the_prior_from_the_command_line(tmp_path, chess_tiny_overrides):
    """`--material_prior_weight 0.5` trains chess, and the saved model's search values count material."""
    tiny = [x for k, v in chess_tiny_overrides.items() for x in (f"--{k}", str(v))]
    run = tmp_path / "run"
    assert main(["train", "--game", "chess", "--run_dir", str(run), "--no-progress", *tiny,
                 "--material_prior_weight", "0.5"]) == 0
    rows, _ = load_metrics(run)
    assert len(rows) == chess_tiny_overrides["num_steps"]
    config, params = load_model(run)
    assert config.material_prior_weight == 0.5
    states = states_of(HANGING_QUEEN, HANGING_QUEEN.replace(" w ", " b "))
    _, value = make_evaluator(config, board_game(config))(params, states)
    _, plain = make_evaluator(config.replace(material_prior_weight=0.0), board_game(config))(params, states)
    np.testing.assert_allclose(value, 0.5 * np.asarray(plain) + 0.5 * np.tanh(np.array([-6.0, 6.0]) / 4), atol=1e-6)
