"""Go-Exploit's value losses on visited and on search states (`azjax.play.value_probe`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from azjax.build import init_params, make_network
from azjax.config import Config
from azjax.games import make_game
from azjax.play.value_probe import expanded_search_state, trajectory_values, value_probe


def _constant_evaluator(value: float):  # noqa: ANN202
    def evaluate(params, states):  # noqa: ANN001, ANN202
        batch = states.current_player.shape[0]
        return jnp.zeros((batch, 7)), jnp.full((batch,), value)

    return evaluate


def test_visited_values_are_scored_against_the_outcome_from_the_player_to_move():
    game = make_game("connect_four")
    # The first player stacks four in column 1 while the second plays column 2: seven plies, first player wins.
    moves = np.full((1, game.max_moves), -1, np.int32)
    moves[0, :7] = [0, 1, 0, 1, 0, 1, 0]
    v, z, live = trajectory_values(game, _constant_evaluator(0.25), None, jax.random.key(0), jnp.asarray(moves))
    live = np.asarray(live)[:, 0]
    assert live[:7].all() and not live[7:].any()  # the seven positions moved from, none after the end
    np.testing.assert_array_equal(np.asarray(z)[:7, 0], [1, -1, 1, -1, 1, -1, 1])
    np.testing.assert_allclose(np.asarray(v)[:7, 0], 0.25)


@struct.dataclass
class _Node:
    terminated: jax.Array
    tag: jax.Array


@struct.dataclass
class _Tree:
    embeddings: _Node
    node_visits: jax.Array


def test_a_search_state_is_an_expanded_non_root_node_that_is_not_terminal():
    # Row 0: node 0 is the root, node 2 was never expanded, node 3 is terminal: only node 1 qualifies.
    # Row 1: nothing but the root was expanded.
    tree = _Tree(
        embeddings=_Node(terminated=jnp.array([[False, False, False, True], [False, False, False, False]]),
                         tag=jnp.array([[10, 11, 12, 13], [20, 21, 22, 23]])),
        node_visits=jnp.array([[5, 3, 0, 1], [1, 0, 0, 0]]),
    )
    for seed in range(8):
        states, found = expanded_search_state(tree, jax.random.key(seed))
        assert int(states.tag[0]) == 11
        np.testing.assert_array_equal(np.asarray(found), [True, False])


@pytest.mark.slow
def test_the_probe_measures_both_losses_of_an_untrained_network():
    config = Config(game="connect_four", num_blocks=1, num_channels=8, eval_simulations=4, temperature_moves=4)
    game = make_game("connect_four")
    params = init_params(make_network(config, game), game, jax.random.key(0))
    out = jax.device_get(value_probe(config, game, 4)(params, jax.random.key(1)))
    assert out["visited_states"] >= 4 * 7  # four games of at least seven plies
    assert 1 <= out["search_states"] <= 4
    # The network's own values: losses of an untrained network, which a constant value of 0 would not give.
    assert float(out["value_loss_visited"]) != pytest.approx(1.0)
    # A network whose value head outputs 0 everywhere (its last layer zeroed; the policy as before): each loss is
    # then mean(z^2) with z in {-1, 0, 1}: the share of its positions whose game was decided. The visited states'
    # games were all decided here (1 exactly); the search states' greedy play-outs give a whole count of decided ones.
    head = params["params"]["value_head"]["Dense_1"]
    silent = {**params, "params": {**params["params"], "value_head": {
        **params["params"]["value_head"], "Dense_1": jax.tree.map(jnp.zeros_like, head)}}}
    zero = jax.device_get(value_probe(config, game, 4)(silent, jax.random.key(1)))
    assert float(zero["value_loss_visited"]) == pytest.approx(1.0)
    decided = float(zero["value_loss_search"]) * int(zero["search_states"])
    assert decided == pytest.approx(round(decided)) and 0 <= round(decided) <= int(zero["search_states"])
    assert float(out["value_loss_visited"]) != float(zero["value_loss_visited"])
