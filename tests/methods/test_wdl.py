"""Leela Chess Zero's win/draw/loss value head (azjax.methods.wdl): the targets' classes and expected scores, the
network's three logits, the search's value P(win) - P(loss), the cross-entropy loss, the loop's health column, and
the tanh head untouched when the switch is off. Its learning test (and the flipped-gradient control) is in
tests/train/test_learning.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.build import init_params, make_evaluator, make_network, value_head
from azjax.config import preset
from azjax.games import make_game
from azjax.methods.alphazero import TanhValue
from azjax.methods.wdl import WinDrawLossValue, expected_score, wdl_target
from azjax.train.loop import Trainer, loss_fn, with_head_health

GAME = make_game("chess")
SMALL = dict(num_blocks=1, num_channels=8)


def test_results_are_one_class_and_other_targets_keep_their_expected_score_with_the_rest_drawn():
    np.testing.assert_array_equal(wdl_target(jnp.array([1.0, 0.0, -1.0])), np.eye(3))
    np.testing.assert_allclose(wdl_target(jnp.array([0.5, -0.25])), [[0.5, 0.5, 0.0], [0.0, 0.75, 0.25]])
    t = jnp.linspace(-1.0, 1.0, 21)
    target = wdl_target(t)
    np.testing.assert_allclose(target.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(target[:, 0] - target[:, 2], t, atol=1e-6)


def test_the_expected_score_is_the_win_probability_less_the_loss_probability():
    logits = jnp.log(jnp.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.25, 0.5, 0.25]]))
    np.testing.assert_allclose(expected_score(logits), [0.6, -0.7, 0.0], atol=1e-6)


@pytest.mark.slow
def test_the_network_ends_its_value_head_in_three_logits_and_the_search_reads_their_expected_score():
    config = preset("chess", value_head="wdl", **SMALL)
    net = make_network(config, GAME)
    params = init_params(net, GAME, jax.random.key(0))
    states = jax.vmap(GAME.init)(jax.random.split(jax.random.key(1), 2))
    logits, wdl = net.apply(params, states.observation)
    assert logits.shape == (2, GAME.num_actions) and wdl.shape == (2, 3)
    _, value = make_evaluator(config, GAME)(params, states)
    np.testing.assert_allclose(value, expected_score(wdl), atol=1e-6)
    assert isinstance(value_head(config), WinDrawLossValue)


def test_off_the_network_and_value_head_are_alphazeros_and_only_the_last_layer_of_the_value_head_differs():
    tanh, wdl = (init_params(make_network(preset("chess", value_head=head, **SMALL), GAME), GAME, jax.random.key(0))
                 for head in ("tanh", "wdl"))
    assert isinstance(value_head(preset("chess", **SMALL)), TanhValue)
    leaves = [jax.tree_util.tree_flatten_with_path(p)[0] for p in (tanh, wdl)]
    assert [k for k, _ in leaves[0]] == [k for k, _ in leaves[1]]
    differ = [jax.tree_util.keystr(k) for (k, a), (_, b) in zip(*leaves, strict=True) if a.shape != b.shape]
    assert differ == ["['params']['value_head']['Dense_1']['bias']", "['params']['value_head']['Dense_1']['kernel']"]


def test_the_value_loss_is_the_cross_entropy_of_the_three_classes_against_the_target():
    head = WinDrawLossValue()
    wdl = jnp.log(jnp.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]))
    outputs = (jnp.zeros((2, 5)), wdl)
    loss = head.value_loss(outputs, expected_score(wdl), jnp.array([1.0, 0.0]))
    assert float(loss) == pytest.approx(-(np.log(0.7) + np.log(0.1)) / 2, rel=1e-5)
    # a draw target is best met by a certain draw, which a tanh head's squared error cannot tell from a coin flip
    certain_draw = head.value_loss((None, jnp.log(jnp.array([[1e-6, 1.0, 1e-6]]))), None, jnp.zeros(1))
    coin_flip = head.value_loss((None, jnp.log(jnp.array([[0.5, 1e-6, 0.5]]))), None, jnp.zeros(1))
    assert float(certain_draw) < 1e-4 < 10 < float(coin_flip)


@pytest.mark.slow
def test_the_loop_loss_reads_the_head_and_logs_its_draw_probability(tiny_overrides):
    config = preset("connect_four", **{**tiny_overrides, "value_head": "wdl"})
    trainer = Trainer(config, devices=jax.devices()[:1])
    assert "draw_mean" in trainer.value.columns
    game = trainer.game
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 4))
    params = init_params(trainer.net, game, jax.random.key(0))
    policy = jnp.full((4, game.num_actions), 1.0 / game.num_actions)
    _, info = loss_fn(with_head_health(trainer.net.apply), trainer.value, params, states.observation, policy,
                      jnp.array([1.0, 0.0, -1.0, 0.0]))
    assert 0 < float(info["draw_mean"]) < 1 and float(info["value_loss"]) > 0


def test_the_switch_refuses_the_legacy_heads_in_one_line():
    with pytest.raises(ValueError, match="value_head='wdl' needs the normalised heads"):
        preset("chess", value_head="wdl", legacy_heads=True)
