"""Batched tree search over a `Game` with mctx.

An *evaluator* maps (params, states [B]) to (prior logits [B, A], value [B]), the value from the
view of the player to move. The network is one evaluator; a material count for chess or SAI's
sigmoid-komi read-out are others. From (game, evaluator) we build mctx's root and recurrent
functions with AlphaZero's two-player conventions (docs/methods.md section 0):

  * the recurrent step plays the action in the real game, reward = the reward of the player who
    moved, value = evaluator's value for the player now to move;
  * discount = -1 (the value flips sign every ply), 0 at terminals, where the value is also 0;
  * illegal actions are masked in the priors and passed to mctx as `invalid_actions`.

An evaluator may also value a node in the light of its parent (SAI's sensible agent): a
`ParentAwareEvaluator` gives each node a `context` ([B, ...]) that the search keeps in the node's
embedding next to the game state and hands to the evaluation of its children.

`run_search` then runs PUCT (`muzero_policy`, with root Dirichlet noise for self-play) or the
Gumbel root (`gumbel_muzero_policy`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Literal

import chex
import jax
import jax.numpy as jnp
import mctx

from azjax.games import Game, GameState
from azjax.search.certainty import Certainty, EndedFn, certain_output
from azjax.search.contempt import Contempt, contempt_on
from azjax.search.layout import SearchOutput, search_moves, slot_action, to_actions, to_slots
from azjax.search.policies import gumbel_muzero_policy, muzero_policy

Evaluator = Callable[[Any, GameState], tuple[jax.Array, jax.Array]]


@dataclasses.dataclass(frozen=True)
class ParentAwareEvaluator:
    """An evaluator whose value of a node depends on its parent through a per-node `context`.

    root(params, states [B]) -> (logits [B, A], value [B], context [B, ...]): the search root.
    child(params, states [B], parent_context [B, ...]) -> (logits, value, context): a node reached
      by one move from a node whose context is `parent_context`.
    Values are from the view of the player to move at the node, as for `Evaluator`. Called as a plain
    evaluator it evaluates `states` as roots.
    """

    root: Callable[[Any, GameState], tuple[jax.Array, jax.Array, Any]]
    child: Callable[[Any, GameState, Any], tuple[jax.Array, jax.Array, Any]]

    def __call__(self, params: Any, states: GameState) -> tuple[jax.Array, jax.Array]:
        logits, value, _ = self.root(params, states)
        return logits, value


@dataclasses.dataclass(frozen=True)
class SearchSpec:
    """Static search settings (hashable, so jitted functions can close over them)."""

    kind: Literal["gumbel", "puct"] = "gumbel"
    num_simulations: int = 32
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    gumbel_c_visit: float = 50.0  # sigma's c_visit and c_scale (`gumbel_qtransform`); mctx's defaults
    gumbel_c_scale: float = 0.1
    pb_c_init: float = 1.25
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    n_scl: int = 0  # search-contempt node limit (docs/methods.md section 1); 0 = off (plain search)
    twofold_draws: bool = False  # a repeated position is a draw inside the tree (Lc0; `Game.draw_repetition`)
    # Lc0's certainty propagation (docs/methods.md section 14; `azjax.search.certainty`): "off"; "visited": a
    # finished game is known where the search reaches it; "expanded": also every move that ends the game, as soon as
    # the node it leaves is expanded.
    certainty: Literal["off", "visited", "expanded"] = "off"


def gumbel_qtransform(spec: SearchSpec) -> Callable[..., jax.Array]:
    """Gumbel's completed Q-values scaled by sigma: mctx's `qtransform_completed_by_mix_value` with the spec's
    c_visit (`maxvisit_init`) and c_scale (`value_scale`)."""
    return functools.partial(mctx.qtransform_completed_by_mix_value, value_scale=spec.gumbel_c_scale,
                             maxvisit_init=spec.gumbel_c_visit)


def network_evaluator(apply_fn: Callable[..., tuple[jax.Array, jax.Array]]) -> Evaluator:
    """The evaluator of a policy-value network: `apply_fn(params, observation)`."""

    def evaluate(params: Any, states: GameState) -> tuple[jax.Array, jax.Array]:
        return apply_fn(params, states.observation)

    return evaluate


def mask_logits(logits: jax.Array, legal: jax.Array) -> jax.Array:
    """Illegal actions get the lowest finite logit; the max is subtracted for stability."""
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def root_fn(game: Game, evaluate: Evaluator, params: Any, states: GameState) -> mctx.RootFnOutput:
    """The root's priors (over slots for a game with a `search_width`, `azjax.search.layout`) and value; its
    embedding is `states` (a `ParentAwareEvaluator`: (states, context))."""
    if isinstance(evaluate, ParentAwareEvaluator):
        logits, value, context = evaluate.root(params, states)
        embedding = (states, context)
    else:
        logits, value = evaluate(params, states)
        embedding = states
    return mctx.RootFnOutput(
        prior_logits=slot_logits(logits, states.legal_action_mask, search_moves(game, states)),
        value=jnp.where(states.terminated, 0.0, value),
        embedding=embedding,
    )


def slot_logits(logits: jax.Array, legal: jax.Array, moves: jax.Array | None) -> jax.Array:
    """A node's prior logits [B, W]: the network's `logits` [B, A] masked to the `legal` actions [B, A], or (a game
    searched over slots) gathered to `moves` [B, W] and masked to the filled slots."""
    if moves is None:
        return mask_logits(logits, legal)
    return mask_logits(to_slots(logits, moves), moves >= 0)


# (params, key, states [B] after the move, the parent's context) -> (prior logits [B, A] (masked; a game searched over
# slots may leave them unmasked), value [B] for the player now to move, this node's context): what a search knows of
# a node it reaches.
LeafFn = Callable[[Any, jax.Array, GameState, Any], tuple[jax.Array, jax.Array, Any]]


def search_step(game: Game, twofold_draws: bool = False) -> Callable[[GameState, jax.Array], GameState]:
    """One game's move as the search plays it: the game's step, and with `twofold_draws` a repeated position a
    draw (Lc0)."""
    return (lambda s, a: game.draw_repetition(game.step(s, a))) if twofold_draws else game.step


def ended_children_fn(game: Game, twofold_draws: bool = False, with_context: bool = False) -> EndedFn:
    """Certainty propagation's scan of a node (`azjax.search.certainty`): every legal move of each of a batch of
    node embeddings [B] played, and the reward to the mover of each one that ends the game, float32 [B, W] by the
    node's slots (A by action where the game has no `search_width`), NaN where the game goes on. W (A) game steps
    a node."""
    step = search_step(game, twofold_draws)

    def ended(embedding: Any) -> jax.Array:
        states = embedding[0] if with_context else embedding
        moves = search_moves(game, states)
        if moves is None:
            legal = states.legal_action_mask
            actions = jnp.broadcast_to(jnp.arange(legal.shape[-1], dtype=jnp.int32), legal.shape)
        else:
            legal, actions = moves >= 0, jnp.maximum(moves, 0)
        children = jax.vmap(jax.vmap(step, in_axes=(None, 0)))(states, actions)  # [B, W]
        mover = states.current_player[:, None, None]
        reward = jnp.take_along_axis(children.rewards, jnp.broadcast_to(mover, (*legal.shape, 1)), axis=-1)[..., 0]
        ends = legal & children.terminated & ~states.terminated[:, None]
        return jnp.where(ends, reward, jnp.nan).astype(jnp.float32)

    return ended


def game_recurrent_fn(game: Game, leaf: LeafFn, with_context: bool = False,
                      twofold_draws: bool = False) -> mctx.RecurrentFn:
    """The one mctx recurrent function for a real two-player game (the 'model' is the game itself), with
    AlphaZero's sign rules (docs/methods.md section 0): the move is played in the game, reward = the reward of
    the player who moved, value = `leaf`'s value for the player now to move, discount -1, and 0 (reward,
    value and discount) once the game is over. The network search and the rollout MCTS differ only in `leaf`.

    The embedding is the states [B], or (states, context) with `with_context` (a `ParentAwareEvaluator`).
    With `twofold_draws` a move that repeats an earlier position ends the game there as a draw (Lc0), in the tree
    only: the roots and the games played keep the game's own rules.

    A game with a `search_width` is searched over slots (`azjax.search.layout`): the action is a slot of the
    node's legal-action list, and the priors the leaf gives over the game's actions are gathered to the child's
    slots. An empty slot of a live position is an illegal move, which loses at once, as pgx rules an illegal
    action (mctx may select one below the root, where it masks nothing).
    """
    step = search_step(game, twofold_draws)
    compact = game.search_width is not None

    def recurrent_fn(params: Any, key: jax.Array, action: jax.Array, embedding: Any):
        states, parent_context = embedding if with_context else (embedding, None)
        mover = states.current_player
        was_terminal = states.terminated
        illegal = jnp.zeros_like(was_terminal)
        if compact:
            action = slot_action(search_moves(game, states), action)
            illegal = (action < 0) & ~was_terminal
            action = jnp.maximum(action, 0)
        states = jax.vmap(step)(states, action)
        prior_logits, value, context = leaf(params, key, states, parent_context)
        reward = jnp.take_along_axis(states.rewards, mover[:, None], axis=1)[:, 0]
        if compact:
            prior_logits = slot_logits(prior_logits, states.legal_action_mask, search_moves(game, states))
            reward = jnp.where(illegal, -1.0, reward)
            states = states.replace(env=states.env.replace(terminated=states.terminated | illegal))
        done = states.terminated | was_terminal
        output = mctx.RecurrentFnOutput(
            reward=jnp.where(was_terminal, 0.0, reward),
            discount=jnp.where(done, 0.0, -1.0),
            # mctx expands below a finished game too (every such node is worth 0). Uniform priors there
            # spread those visits over the children instead of one ever-deeper chain (the masked priors of
            # a finished position can put all their mass on one move): the values and the visit counts of
            # the real positions are the same, and the tree stays as deep as the game.
            prior_logits=jnp.where(done[:, None], 0.0, prior_logits),
            value=jnp.where(done, 0.0, value),
        )
        return output, ((states, context) if with_context else states)

    return recurrent_fn


def make_recurrent_fn(game: Game, evaluate: Evaluator | ParentAwareEvaluator,
                      twofold_draws: bool = False) -> mctx.RecurrentFn:
    """`game_recurrent_fn` with an evaluator's priors (illegal moves masked) and values."""
    # A game searched over slots masks its priors once gathered to the slots (`slot_logits`): masking all A first
    # would read every action's legality for nothing.
    mask = (lambda logits, states: logits) if game.search_width is not None else (
        lambda logits, states: mask_logits(logits, states.legal_action_mask))

    if isinstance(evaluate, ParentAwareEvaluator):
        child = evaluate.child

        def leaf(params: Any, key: jax.Array, states: GameState, parent_context: Any):
            del key
            logits, value, context = child(params, states, parent_context)
            return mask(logits, states), value, context

        return game_recurrent_fn(game, leaf, with_context=True, twofold_draws=twofold_draws)

    def plain_leaf(params: Any, key: jax.Array, states: GameState, parent_context: Any):
        del key, parent_context
        logits, value = evaluate(params, states)
        return mask(logits, states), value, None

    return game_recurrent_fn(game, plain_leaf, twofold_draws=twofold_draws)


def search_inputs(game: Game, evaluate: Evaluator | ParentAwareEvaluator, params: Any, states: GameState,
                  twofold_draws: bool = False) -> tuple[mctx.RootFnOutput, mctx.RecurrentFn, jax.Array]:
    """What any mctx policy needs to search from `states` ([B] games): (root, recurrent_fn, invalid_actions
    [B, A]); `twofold_draws` as in `game_recurrent_fn`."""
    root = root_fn(game, evaluate, params, states)
    moves = search_moves(game, states)
    invalid = ~states.legal_action_mask if moves is None else moves < 0
    # A finished game has no legal move; give mctx something to search (the result is unused).
    invalid = jnp.where(invalid.all(axis=-1, keepdims=True), False, invalid)
    return root, make_recurrent_fn(game, evaluate, twofold_draws), invalid


def run_search(
    spec: SearchSpec,
    game: Game,
    evaluate: Evaluator | ParentAwareEvaluator,
    params: Any,
    key: jax.Array,
    states: GameState,
    simulations: jax.Array | None = None,
    plan: jax.Array | None = None,
) -> mctx.PolicyOutput:
    """Searches from every root in `states` ([B] games).

    Returns mctx's PolicyOutput: `action` [B], `action_weights` [B, A] (PUCT: visit distribution;
    Gumbel: the improved policy), `search_tree`; for a game searched over slots a `SearchOutput`, whose
    `moves` [B, W] map the tree's root slots to actions (`azjax.search.layout`).

    `simulations` (int32 scalar, may be traced) runs that many of the spec's num_simulations in its tree; a Gumbel
    root then follows `plan` (`azjax.search.policies.visit_plan` of `simulations`, int32 [M + 1, num_simulations]):
    the search of `simulations`, from one program compiled for every budget up to num_simulations (the engines).
    """
    return game_actions(game, states, search_over_slots(spec, game, evaluate, params, key, states, simulations, plan))


def game_actions(game: Game, states: GameState, out: mctx.PolicyOutput) -> mctx.PolicyOutput:
    """A search's output over the slots of `states` [B] with its action and action weights as the game's
    (`SearchOutput`); the output as it is for a game searched over its whole action space."""
    moves = search_moves(game, states)
    if moves is None:
        return out
    return SearchOutput(action=slot_action(moves, out.action),
                        action_weights=to_actions(out.action_weights, moves, game.num_actions),
                        search_tree=out.search_tree, moves=moves)


def search_over_slots(
    spec: SearchSpec,
    game: Game,
    evaluate: Evaluator | ParentAwareEvaluator,
    params: Any,
    key: jax.Array,
    states: GameState,
    simulations: jax.Array | None = None,
    plan: jax.Array | None = None,
) -> mctx.PolicyOutput:
    """`run_search`'s search, its output over the tree's root slots (the game's actions where it has no
    `search_width`)."""
    root, recurrent_fn, invalid = search_inputs(game, evaluate, params, states, spec.twofold_draws)
    # The two kinds differ only in their own knobs; search-contempt (n_scl) and certainty propagation extend both.
    extension = None
    if contempt_on(spec.n_scl):
        extension = Contempt(spec.n_scl)
    elif spec.certainty != "off":
        extension = Certainty(ended_children_fn(game, spec.twofold_draws, isinstance(evaluate, ParentAwareEvaluator))
                              if spec.certainty == "expanded" else None)
    common = dict(params=params, rng_key=key, root=root, recurrent_fn=recurrent_fn,
                  num_simulations=spec.num_simulations, invalid_actions=invalid, extension=extension,
                  simulations=simulations)
    if spec.kind == "gumbel":
        if (simulations is None) != (plan is None):
            raise ValueError("a Gumbel search with a budget as an input needs its visit plan too")
        out = gumbel_muzero_policy(
            **common, max_num_considered_actions=spec.max_num_considered_actions, gumbel_scale=spec.gumbel_scale,
            qtransform=gumbel_qtransform(spec), plan=plan,
        )
    else:
        out = muzero_policy(
            **common, pb_c_init=spec.pb_c_init, dirichlet_alpha=spec.dirichlet_alpha,
            dirichlet_fraction=spec.dirichlet_fraction,
        )
    if not isinstance(extension, Certainty):
        return out
    if spec.kind == "puct":  # the most visited move (first on ties), as `searched_choice` plays it
        out = out.replace(action=jnp.argmax(out.search_tree.summary().visit_counts, axis=-1).astype(jnp.int32))
    return certain_output(out)


def root_q_values(tree: mctx.Tree) -> jax.Array:
    """float32 [B, A]: each root child's mean backed-up value, reward + discount x child value, from the view
    of the player to move at the root; meaningful where the child was visited."""
    return tree.children_rewards[:, 0] + tree.children_discounts[:, 0] * tree.children_values[:, 0]


def policy_value(tree: mctx.Tree, policy: jax.Array, moves: jax.Array | None = None) -> jax.Array:
    """float32 [B]: the root's value under `policy` [B, A] (e.g. the search's policy target), from the view of
    the player to move: sum_a policy(a) Q(a) over the visited root children, `policy` renormalised over them;
    the root's mean backed-up value where `policy` weighs no visited child. `moves` [B, W]: the root's slots
    (`SearchOutput.moves`) where the tree is searched over slots and `policy` is over the game's actions.

    Under PUCT with the visit distribution this is the root's value without its own network evaluation. Under
    Gumbel it is the value of the improved policy; the root's mean value there averages over every move that
    sequential halving visited, the losing ones included."""
    visited = tree.children_visits[:, 0] > 0
    weights = jnp.where(visited, to_slots(policy, moves), 0.0)
    total = weights.sum(axis=-1)
    value = (weights * jnp.where(visited, root_q_values(tree), 0.0)).sum(axis=-1) / jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, value, tree.node_values[:, 0])


def root_visit_counts(out: mctx.PolicyOutput) -> jax.Array:
    """int32 [B, A]: the root's child visit counts, by the game's actions."""
    counts = out.search_tree.summary().visit_counts
    moves = getattr(out, "moves", None)
    return counts if moves is None else to_actions(counts, moves, out.action_weights.shape[-1])


def searched_choice(spec: SearchSpec, out: mctx.PolicyOutput) -> jax.Array:
    """int32 [B]: the search's own choice: Gumbel's sequential-halving winner (mctx's `action`), or PUCT's
    most visited root child (first on ties). Both were visited by the search. With certainty propagation, the
    `action` of `azjax.search.certainty.certain_output` for both."""
    if spec.kind == "gumbel" or spec.certainty != "off":
        return out.action.astype(jnp.int32)
    return jnp.argmax(root_visit_counts(out), axis=-1).astype(jnp.int32)


def choose_move(spec: SearchSpec, key: jax.Array, out: mctx.PolicyOutput, explore: jax.Array,
                tau: jax.Array | float = 1.0) -> jax.Array:
    """The one move chooser of self-play, evaluation, arena and engines: int32 [B].

    Where `explore` ([B] bool, e.g. inside the temperature window) the move is sampled from the search's
    policy target pi^(1/tau) (`out.action_weights`: PUCT's visit distribution, Gumbel's improved policy);
    elsewhere it is the search's own choice (`searched_choice`). Argmax of Gumbel's improved policy is
    never played: unvisited moves share one mixed value, so it can pick a move the search never looked at.
    """
    chex.assert_rank(explore, 1)
    tau = jnp.broadcast_to(jnp.asarray(tau, jnp.float32), explore.shape)
    weights = out.action_weights
    logits = jnp.where(weights > 0, jnp.log(jnp.maximum(weights, 1e-30)), -jnp.inf)
    logits = logits / jnp.where(tau > 0, tau, 1.0)[:, None]
    # A finished game's root has no weights; its move is never played.
    logits = jnp.where(jnp.isfinite(logits).any(axis=-1, keepdims=True), logits, 0.0)
    sampled = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
    return jnp.where(explore & (tau > 0), sampled, searched_choice(spec, out))
