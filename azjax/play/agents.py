"""Agents: anything that picks a move for a batch of games.

An agent is a name, a jittable move function and its parameters:

    actions = agent.act(agent.params, key, states)   # states: GameState [B] -> int32 [B]

`params` is an argument (not a constant closed over by `act`) so one compiled function serves every
new set of weights: an arena or a periodic evaluation swaps `params` and never recompiles. The
factories below build `act` once per (hashable) setting, so asking twice for the same kind of agent
gives the same `act` function, which keeps jit caches keyed on it warm.

Agents provided:
  * `random_agent`: uniform over legal moves.
  * `material_agent` (chess): one ply of material, the legal move that captures the most.
  * `rollout_mcts_agent`: pure Monte-Carlo tree search (UCT with uniformly random playouts), the
    classic network-free reference opponent, built on mctx's search loop (`azjax.search.core.search`).
  * `search_agent` / `network_agent`: an evaluator (e.g. the policy-value network) with azjax's
    PUCT or Gumbel search, playing the greedy move.
  * `policy_agent`: the argmax of an evaluator's raw policy over legal moves (no search).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mctx

from azjax.build import cached_evaluator, search_spec
from azjax.config import Config
from azjax.games import Game, GameState, board_arrays
from azjax.play.material import capture_values
from azjax.search import Evaluator, SearchSpec, game_recurrent_fn, mask_logits, run_search, searched_choice
from azjax.search.core import search
from azjax.search.game_search import slot_logits
from azjax.search.layout import search_moves, slot_action

ActFn = Callable[[Any, jax.Array, GameState], jax.Array]

# Prior logit of an illegal move in the rollout-MCTS tree; legal moves have logit 0.
_ILLEGAL_LOGIT = -1e9


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
    """A player: `act(params, key, states [B]) -> int32 actions [B]`, jittable.

    Attributes:
      name: a label for tables and logs.
      act: the move function; pure, so it can be jitted with `params` as an argument.
      params: the agent's parameters (a network's weights), or None.
    """

    name: str
    act: ActFn
    params: Any = None

    def with_params(self, params: Any, name: str | None = None) -> Agent:
        """The same agent (same compiled `act`) with new parameters."""
        return dataclasses.replace(self, params=params, name=self.name if name is None else name)

    def __call__(self, key: jax.Array, states: GameState) -> jax.Array:
        return self.act(self.params, key, states)


# ---------------------------------------------------------------- random play


def random_legal_actions(key: jax.Array, legal: jax.Array) -> jax.Array:
    """int32 [B]: a uniformly random legal action per row of `legal` (bool [B, A])."""
    logits = jnp.where(legal, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def _random_act(params: Any, key: jax.Array, states: GameState) -> jax.Array:
    del params
    return random_legal_actions(key, states.legal_action_mask)


def random_agent(game: Game, name: str = "random") -> Agent:
    """Plays a uniformly random legal move."""
    del game
    return Agent(name=name, act=_random_act)


def _material_act(params: Any, key: jax.Array, states: GameState) -> jax.Array:
    del params
    x = board_arrays(states)
    gain = capture_values(x.board, x.en_passant)  # whole pawns: 0, 1, 3, 5, 8, 9
    noise = 0.5 * jax.random.uniform(key, gain.shape)  # breaks ties (all quiet moves) at random, nothing else
    return jnp.argmax(jnp.where(states.legal_action_mask, gain + noise, -1.0), axis=-1).astype(jnp.int32)


def material_agent(game: Game, name: str = "material") -> Agent:
    """Chess, one ply of material: the legal move that wins the most material at once (the most
    valuable victim; a queening counts 8 pawns), ties at random. It sees no replies, so it takes
    defended pieces: the classic one-ply baseline a learned value should beat."""
    if game.name != "chess":
        raise ValueError(f"the material agent plays chess, not {game.name}")
    return Agent(name=name, act=_material_act)


def random_playout(game: Game, key: jax.Array, states: GameState) -> jax.Array:
    """Plays uniformly random legal moves until every game in the batch is over.

    Args:
      game: the game.
      key: PRNG key.
      states: GameState [B].

    Returns:
      float32 [B]: each game's final reward for the player to move in `states` (+1 win, 0 draw,
      -1 loss); 0 for games already over in `states`.
    """
    player = states.current_player

    def cond(carry: tuple[jax.Array, GameState, jax.Array, jax.Array]) -> jax.Array:
        _, s, _, ply = carry
        return ~jnp.all(s.terminated) & (ply < game.max_moves)

    def body(carry: tuple[jax.Array, GameState, jax.Array, jax.Array]):
        key, s, total, ply = carry
        key, sub = jax.random.split(key)
        was_done = s.terminated
        s = jax.vmap(game.step)(s, random_legal_actions(sub, s.legal_action_mask))
        reward = jnp.take_along_axis(s.rewards, player[:, None], axis=1)[:, 0]
        return key, s, total + jnp.where(was_done, 0.0, reward), ply + 1

    total = jnp.zeros(player.shape, jnp.float32)
    _, _, total, _ = jax.lax.while_loop(cond, body, (key, states, total, jnp.int32(0)))
    return total


def mean_playout(game: Game, key: jax.Array, states: GameState, num_rollouts: int) -> jax.Array:
    """float32 [B]: the mean of `num_rollouts` independent random playouts from each state."""
    if num_rollouts == 1:
        return random_playout(game, key, states)
    batch = states.current_player.shape[0]
    tiled = jax.tree.map(lambda x: jnp.tile(x, (num_rollouts,) + (1,) * (x.ndim - 1)), states)
    return random_playout(game, key, tiled).reshape(num_rollouts, batch).mean(axis=0)


# ---------------------------------------------------------------- rollout MCTS (UCT)


def uct_action_selection(
    rng_key: jax.Array,
    tree: mctx.Tree,
    node_index: jax.Array,
    depth: jax.Array,
    *,
    c_uct: float,
) -> jax.Array:
    """UCT for one node of an _unbatched_ mctx tree (signature of mctx's action selection fns).

    Unvisited legal children come first (in random order); then argmax of
    Q + c_uct * sqrt(ln N_parent / N_child), with Q in [-1, 1] the child's mean value from the
    mover's view (mctx's `tree.qvalues` with discount -1). On this [-1, 1] scale c_uct = 1.4 equals
    c = 0.7 on the [0, 1] win-rate scale (textbook UCB1's sqrt(2) there would be 2.83 here).
    Legality is read from the children's prior logits (illegal = `_ILLEGAL_LOGIT`), at the root also
    from `tree.root_invalid_actions`.

    Returns:
      int32 []: the selected action.
    """
    visits = tree.children_visits[node_index].astype(jnp.float32)  # [A]
    legal = tree.children_prior_logits[node_index] > _ILLEGAL_LOGIT / 2
    legal = legal & ~(tree.root_invalid_actions.astype(bool) & (depth == 0))
    log_parent = jnp.log(jnp.maximum(tree.node_visits[node_index].astype(jnp.float32), 1.0))
    ucb = tree.qvalues(node_index) + c_uct * jnp.sqrt(log_parent / jnp.maximum(visits, 1.0))
    score = jnp.where(visits == 0, 1e9, ucb) + 1e-6 * jax.random.uniform(rng_key, visits.shape)
    return jnp.argmax(jnp.where(legal, score, -jnp.inf)).astype(jnp.int32)


def _legal_logits(legal: jax.Array) -> jax.Array:
    return jnp.where(legal, 0.0, _ILLEGAL_LOGIT).astype(jnp.float32)


def make_rollout_recurrent_fn(game: Game, num_rollouts: int = 1) -> mctx.RecurrentFn:
    """`azjax.search.game_recurrent_fn` whose leaf value is the mean of random playouts (uniform priors
    over legal moves)."""

    def leaf(params: Any, key: jax.Array, states: GameState, parent_context: Any):
        del params, parent_context
        return _legal_logits(states.legal_action_mask), mean_playout(game, key, states, num_rollouts), None

    return game_recurrent_fn(game, leaf)


def rollout_mcts_search(
    game: Game,
    key: jax.Array,
    states: GameState,
    *,
    num_simulations: int,
    c_uct: float = 1.4,
    num_rollouts: int = 1,
) -> mctx.Tree:
    """UCT search with random playouts from every root in `states` ([B] games).

    Returns:
      the mctx search tree; `tree.summary().visit_counts` [B, A] are the root's child visits (over the root's
      slots, `search_moves`, for a game with a `search_width`).
    """
    legal = states.legal_action_mask
    root_key, key = jax.random.split(key)
    root_value = mean_playout(game, root_key, states, num_rollouts)
    moves = search_moves(game, states)
    prior_logits = _legal_logits(legal)
    if moves is not None:  # searched over slots (`azjax.search.layout`)
        prior_logits, legal = slot_logits(prior_logits, legal, moves), moves >= 0
    root = mctx.RootFnOutput(
        prior_logits=prior_logits,
        value=jnp.where(states.terminated, 0.0, root_value),
        embedding=states,
    )
    select = functools.partial(uct_action_selection, c_uct=c_uct)
    return search(
        params=None,
        rng_key=key,
        root=root,
        recurrent_fn=make_rollout_recurrent_fn(game, num_rollouts),
        root_action_selection_fn=lambda k, t, i: select(k, t, i, jnp.zeros(())),
        interior_action_selection_fn=select,
        num_simulations=num_simulations,
        invalid_actions=~legal,
    )


def most_visited_action(tree: mctx.Tree, legal: jax.Array) -> jax.Array:
    """int32 [B]: the most-visited legal root child; ties go to the higher root Q."""
    summary = tree.summary()
    score = summary.visit_counts + 0.25 * (summary.qvalues + 1.0)  # Q in [-1, 1]: tie-break only
    return jnp.argmax(jnp.where(legal, score, -jnp.inf), axis=-1).astype(jnp.int32)


@functools.cache
def _rollout_mcts_act(game: Game, num_simulations: int, c_uct: float, num_rollouts: int) -> ActFn:
    def act(params: Any, key: jax.Array, states: GameState) -> jax.Array:
        del params
        tree = rollout_mcts_search(
            game, key, states, num_simulations=num_simulations, c_uct=c_uct, num_rollouts=num_rollouts
        )
        moves = search_moves(game, states)
        if moves is None:
            return most_visited_action(tree, states.legal_action_mask)
        return slot_action(moves, most_visited_action(tree, moves >= 0))

    return act


def rollout_mcts_agent(
    game: Game,
    num_simulations: int,
    c_uct: float = 1.4,
    num_rollouts: int = 1,
    name: str | None = None,
) -> Agent:
    """Pure MCTS: UCT selection, random-playout leaf values, most-visited root move.

    Args:
      game: the game.
      num_simulations: simulations (tree nodes added) per move.
      c_uct: exploration constant, for values in [-1, 1] (see `uct_action_selection`); 1.4 found
        immediate wins and blocks reliably with 200 simulations on Connect Four, where 2.83 did not.
      num_rollouts: random playouts averaged per new leaf.
      name: defaults to `mcts{num_simulations}`.
    """
    act = _rollout_mcts_act(game, int(num_simulations), float(c_uct), int(num_rollouts))
    return Agent(name=name or f"mcts{num_simulations}", act=act)


# ---------------------------------------------------------------- evaluator-based agents


@functools.cache
def _search_act(game: Game, evaluate: Evaluator, spec: SearchSpec) -> ActFn:
    def act(params: Any, key: jax.Array, states: GameState) -> jax.Array:
        out = run_search(spec, game, evaluate, params, key, states)
        return searched_choice(spec, out)

    return act


def search_agent(game: Game, evaluate: Evaluator, spec: SearchSpec, name: str = "search", params: Any = None) -> Agent:
    """An evaluator with azjax's search (`run_search`), playing the greedy move.

    PUCT plays the most-visited root child; Gumbel plays the Sequential Halving winner `out.action`,
    which is deterministic only when `spec.gumbel_scale == 0` (as `azjax.build.search_spec(...,
    training=False)` sets it). Pass a spec without root noise for evaluation.
    The agent's `params` are the evaluator's params.
    """
    return Agent(name=name, act=_search_act(game, evaluate, spec), params=params)


def network_agent(
    config: Config, game: Game, params: Any, num_simulations: int | None = None, name: str | None = None
) -> Agent:
    """The network of `config` with its evaluation search (`azjax.build.search_spec(training=False)`).

    Repeated calls with the same (config, game, num_simulations) share one `act` function, so an
    arena compiled for it is reused for new `params`.
    """
    spec = search_spec(config, training=False, num_simulations=num_simulations)
    name = name or f"net-{spec.kind}{spec.num_simulations}"
    return search_agent(game, cached_evaluator(config, game), spec, name=name, params=params)


@functools.cache
def _policy_act(evaluate: Evaluator) -> ActFn:
    def act(params: Any, key: jax.Array, states: GameState) -> jax.Array:
        del key
        logits, _ = evaluate(params, states)
        return jnp.argmax(mask_logits(logits, states.legal_action_mask), axis=-1).astype(jnp.int32)

    return act


def policy_agent(game: Game, evaluate: Evaluator, name: str = "policy", params: Any = None) -> Agent:
    """Plays the argmax of the evaluator's prior over legal moves (no search)."""
    del game
    return Agent(name=name, act=_policy_act(evaluate), params=params)
