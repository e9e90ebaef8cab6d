"""azjax: AlphaZero in JAX (pgx games, mctx search, one device-resident training loop).

The public API; everything else is reachable through the modules named in README's layout section.

    config = preset("connect_four", "quick", num_simulations=32)
    summary = train(config, "runs/c4")      # from azjax.train import train (the package azjax.train)
    config, params = load_model("results/models/connect_four_quick")
    agent = network_agent(config, play_game(config), params, num_simulations=64)
    # a new method: AlphaZero's seams (azjax.methods.alphazero) with one replaced
    built = build_loop(config)                 # the game, network and seams, built once
    trainer = Trainer(dataclasses.replace(built, seams=dataclasses.replace(built.seams, targets=MyTargets())))

The names are resolved on first access (PEP 562), so `import azjax` alone starts no JAX backend: the
command line must call `jax.distributed.initialize()` (AZJAX_DISTRIBUTED=1) before anything imports pgx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "Config": "azjax.config",
    "PRESETS": "azjax.config",
    "preset": "azjax.config",
    "GAMES": "azjax.games",
    "Game": "azjax.games",
    "GameState": "azjax.games",
    "make_game": "azjax.games",
    "config_game": "azjax.build",
    "game_named": "azjax.build",
    "play_game": "azjax.build",
    "make_network": "azjax.build",
    "make_evaluator": "azjax.build",
    "load_model": "azjax.build",
    "load_checkpoint": "azjax.build",
    "loop_seams": "azjax.build",
    "Built": "azjax.build",
    "build_loop": "azjax.build",
    "Seams": "azjax.methods.alphazero",
    "SearchSpec": "azjax.search",
    "run_search": "azjax.search",
    "choose_move": "azjax.search",
    "Agent": "azjax.play.agents",
    "network_agent": "azjax.play.agents",
    "policy_agent": "azjax.play.agents",
    "random_agent": "azjax.play.agents",
    "rollout_mcts_agent": "azjax.play.agents",
    "search_agent": "azjax.play.agents",
    "Trainer": "azjax.train.loop",
}

__all__ = [
    "GAMES",
    "PRESETS",
    "Agent",
    "Built",
    "Config",
    "Game",
    "GameState",
    "SearchSpec",
    "Seams",
    "Trainer",
    "build_loop",
    "choose_move",
    "config_game",
    "game_named",
    "load_checkpoint",
    "load_model",
    "loop_seams",
    "make_evaluator",
    "make_game",
    "make_network",
    "network_agent",
    "play_game",
    "policy_agent",
    "preset",
    "random_agent",
    "rollout_mcts_agent",
    "run_search",
    "search_agent",
]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily
    from azjax.build import (
        Built,
        build_loop,
        config_game,
        game_named,
        load_checkpoint,
        load_model,
        loop_seams,
        make_evaluator,
        make_network,
        play_game,
    )
    from azjax.config import PRESETS, Config, preset
    from azjax.games import GAMES, Game, GameState, make_game
    from azjax.methods.alphazero import Seams
    from azjax.play.agents import Agent, network_agent, policy_agent, random_agent, rollout_mcts_agent, search_agent
    from azjax.search import SearchSpec, choose_move, run_search
    from azjax.train.loop import Trainer


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'azjax' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
