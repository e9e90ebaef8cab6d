"""The whole loop learns: a short Connect Four run from scratch (self-play, replay, SGD, as `azjax train` runs them)
beats random play and rollout MCTS, and the same network with its heads silenced (a constant policy and value)
does not: a loop whose learning broke anywhere would play like the silenced one."""

from __future__ import annotations

from typing import Any

import jax
import pytest

from azjax.config import preset
from azjax.play.agents import network_agent, random_agent, rollout_mcts_agent
from azjax.play.arena import match
from azjax.train.loop import Trainer

# About 50k self-play positions, each trained on about twice: 70 s on 2 busy CPU cores. The thresholds leave room:
# measured here, the trained network scored 1.0 against random play and 0.66 against mcts:20, its silenced self
# 0.875 and 0.15 (80 steps: 0.95 and 0.65).
CONFIG = dict(num_blocks=2, num_channels=16, num_envs=64, num_simulations=8, moves_per_step=8, replay_size=16384,
              min_replay_size=512, batch_size=128, sgd_steps_per_step=8, num_steps=100, lr_warmup_steps=5,
              eval_every=0, value_target_q_weight=0.75)
GAMES = 40
SEARCH = 16  # simulations per move of the network's search in the matches
MCTS = 20  # rollout MCTS simulations per move


def silenced(params: Any) -> Any:
    """The network with the last layers of its policy and value heads zeroed: a uniform prior and a value of 0.
    (The policy logits are the network's one top-level Dense layer; the value is its value head's last Dense.)"""
    layers = dict(params["params"])
    zero = lambda tree: jax.tree.map(lambda x: x * 0, tree)  # noqa: E731
    (logits,) = [k for k in layers if k.startswith("Dense_")]
    value_last = max(k for k in layers["value_head"] if k.startswith("Dense_"))
    layers[logits] = zero(layers[logits])
    layers["value_head"] = {**layers["value_head"], value_last: zero(layers["value_head"][value_last])}
    return {**params, "params": layers}


@pytest.mark.slow
def test_a_short_connect_four_run_beats_random_play_and_rollout_mcts_where_its_silenced_network_does_not():
    config = preset("connect_four", "quick", **CONFIG)
    trainer = Trainer(config)
    state = trainer.init(0)
    for _ in range(config.num_steps):
        state, metrics = trainer.step(state)
    assert float(metrics["sgd_applied"]) > 0
    game = trainer.game
    key = jax.random.key(7)
    scores = {}
    for name, params in (("trained", state.exported_params), ("silenced", silenced(state.exported_params))):
        agent = network_agent(config, game, params, num_simulations=SEARCH, name=name)
        scores[name] = (match(game, agent, random_agent(game), GAMES, key).score,
                        match(game, agent, rollout_mcts_agent(game, MCTS), GAMES, key).score)
    print(f"scores against (random, mcts:{MCTS}): {scores}")
    assert scores["trained"][0] >= 0.85 and scores["trained"][1] >= 0.55, scores
    assert scores["silenced"][1] < 0.4 and scores["trained"][1] >= scores["silenced"][1] + 0.25, scores
