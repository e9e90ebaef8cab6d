"""Value loss on visited and on search states: Go-Exploit's measure of how well a value function predicts
outcomes under the current policy (Trudeau & Bowling, Table 2; docs/methods.md section 3, "Measures").

    probe = value_probe(config, game, num_games=64)     # compiled once per (config, game, num_games)
    losses = probe(params, key)   # {"value_loss_visited", "value_loss_search", "visited_states", "search_states"}

The paper's protocol, on one set of weights:
  * visited states: `num_games` self-play games from the initial state with the network and its evaluation
    search (no root noise; moves drawn from the search's policy inside the temperature window, then the
    search's own choice). Every non-terminal position of those games is a visited state; its loss is
    (v - z)^2 with v the network's value and z the game's outcome, both from the player to move.
  * search states: one per game, a non-terminal node the search expanded (not its root) at a position
    of that game drawn uniformly; from it a trajectory is played to the end with the greedy network agent
    (no noise, no sampling), whose outcome is z.

Values are the network's own (the value head's output, SAI: 2 rho(0) - 1 at the game's komi), never the
search's. The loop's driver writes both losses to metrics.csv at evaluation steps (`value_probe_games`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from azjax.build import cached_evaluator, search_spec
from azjax.config import Config
from azjax.games import Game, GameState
from azjax.play.agents import network_agent
from azjax.play.arena import play_from
from azjax.play.selfplay_stats import replay_moves, step_recorded, temperature_agent
from azjax.search import run_search

ValueProbe = Callable[[Any, jax.Array], dict[str, jax.Array]]


def trajectory_values(game: Game, evaluate: Callable, params: Any, key: jax.Array,
                      moves: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Replays recorded games and values every position they passed through.

    moves: int32 [N, T] (-1 after each game's end), from `game.init(key)`.
    Returns (v [T, N]: the network's value from the player to move; z [T, N]: the game's outcome from
    that player; live [T, N]: the position is non-terminal and was played from).
    """
    states = jax.vmap(game.init)(jax.random.split(key, moves.shape[0]))

    def body(s: GameState, col: jax.Array) -> tuple[GameState, tuple[jax.Array, jax.Array, jax.Array]]:
        _, v = evaluate(params, s)
        return step_recorded(game, s, col), (v, s.current_player, (col >= 0) & ~s.terminated)

    final, (v, player, live) = jax.lax.scan(body, states, moves.T)
    z = jnp.take_along_axis(final.rewards, player.T, axis=1).T  # [N, 2] by [N, T] -> [T, N]
    return v, z, live


def _masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    return jnp.where(mask, x, 0.0).sum() / jnp.maximum(mask.sum(), 1)


def expanded_search_state(tree: Any, key: jax.Array) -> tuple[GameState, jax.Array]:
    """One node per search, drawn uniformly among the non-root expanded nodes that are not terminal.

    tree: mctx.Tree [B] whose embeddings are GameStates (or (GameState, context) pairs).
    Returns (states [B], found [B] bool: the search expanded such a node).
    """
    embedding = tree.embeddings[0] if isinstance(tree.embeddings, tuple) else tree.embeddings
    num_nodes = tree.node_visits.shape[1]
    candidate = (tree.node_visits > 0) & (jnp.arange(num_nodes) > 0) & ~embedding.terminated
    logits = jnp.where(candidate, 0.0, -jnp.inf)
    node = jax.random.categorical(key, jnp.where(candidate.any(axis=1, keepdims=True), logits, 0.0), axis=1)
    pick = lambda x: jnp.take_along_axis(x, node.reshape((-1,) + (1,) * (x.ndim - 1)), axis=1)[:, 0]  # noqa: E731
    return jax.tree.map(pick, embedding), candidate.any(axis=1)


@functools.cache
def value_probe(config: Config, game: Game, num_games: int) -> ValueProbe:
    """The jitted probe `(params, key) -> losses` of `config`'s network (see the module docstring).

    num_games: games played from the initial state (even); also the number of search states.
    """
    if num_games < 2 or num_games % 2:
        raise ValueError(f"value probe: num_games must be even and >= 2, got {num_games}")
    evaluate = cached_evaluator(config, game)
    spec = search_spec(config, training=False, num_simulations=config.eval_simulations)
    sampler = temperature_agent(game, evaluate, spec, tau=1.0, temperature_moves=config.temperature_moves)
    greedy = network_agent(config, game, None, num_simulations=config.eval_simulations)

    def probe(params: Any, key: jax.Array) -> dict[str, jax.Array]:
        k_init, k_play, k_ply, k_search, k_node, k_out = jax.random.split(key, 6)
        sampler_params = sampler.params.replace(evaluator=params)

        # Visited states: self-play from the initial state, then every position valued against the outcome.
        starts = jax.vmap(game.init)(jax.random.split(k_init, num_games))
        records, _ = play_from(game, sampler.act, sampler.act, sampler_params, sampler_params, k_play, starts,
                               game.max_moves)
        v, z, live = trajectory_values(game, evaluate, params, k_init, records.moves)
        visited = _masked_mean((v - z) ** 2, live)

        # Search states: search one position of each game, keep one expanded node, play it out greedily.
        ply = jax.random.randint(k_ply, (num_games,), 0, jnp.maximum(records.length, 1))
        prefix = jnp.where(jnp.arange(game.max_moves) < ply[:, None], records.moves, -1)
        positions = replay_moves(game, prefix, k_init)
        out = run_search(spec, game, evaluate, params, k_search, positions)
        search_states, found = expanded_search_state(out.search_tree, k_node)
        mover = search_states.current_player
        _, finals = play_from(game, greedy.act, greedy.act, params, params, k_out, search_states, game.max_moves)
        z_search = jnp.take_along_axis(finals.rewards, mover[:, None], axis=1)[:, 0]
        _, v_search = evaluate(params, search_states)
        search = _masked_mean((v_search - z_search) ** 2, found)
        return {"value_loss_visited": visited, "value_loss_search": search,
                "visited_states": live.sum(), "search_states": found.sum()}

    return jax.jit(probe)

