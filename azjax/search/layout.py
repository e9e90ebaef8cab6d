"""A search tree as wide as the legal moves (docs/architecture.md, "The search tree's width").

mctx keeps, for every node, arrays over all of a node's children (visits, values, prior logits, rewards, discounts,
child index). With a child per action of the action space a chess node costs 4,672 of each, for a position with
at most 218 legal moves (usually 30 to 40). A game with a `search_width` W (`Game.search_width`; chess: 256) is
searched over *slots* instead: slot i of a node is its i-th legal move in increasing order
(`Game.legal_actions`, -1 past the last), so a node costs W of each. Games without one keep a child per action,
and nothing here touches their search (every function is the identity where `moves` is None).

`moves` below is a node's (or a batch of nodes') legal-action list, int32 [..., W], or None for the identity
layout. A search's output keeps the root's as `SearchOutput.moves`; deeper nodes' come from their states
(`node_moves`). Outside the search, actions are always the game's: the search's chosen `action` and its dense
`action_weights` [B, A] are mapped back before anyone reads them.
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx

from azjax.games import Game, GameState

__all__ = ["SearchOutput", "node_moves", "search_moves", "slot_action", "slot_of", "to_actions", "to_slots"]


@chex.dataclass(frozen=True)
class SearchOutput(mctx.PolicyOutput):
    """mctx's PolicyOutput of a search over slots, with its actions mapped back to the game's.

    action: int32 [B], the searched action (a game action). action_weights: float32 [B, A] over the game's actions.
    search_tree: the tree, whose children are slots of each node's `moves`. moves: int32 [B, W], the root's legal
    actions by slot (-1 past the last).
    """

    moves: Any = None


def search_moves(game: Game, states: GameState) -> jax.Array | None:
    """int32 [B, W]: the legal-action list of each of `states` [B] where the game searches over slots, else None."""
    return None if game.search_width is None else game.legal_actions(states).astype(jnp.int32)


def to_slots(x: jax.Array, moves: jax.Array | None) -> jax.Array:
    """[..., W]: the entries of `x` [..., A] at each slot's action (entry 0 at the empty slots: mask them)."""
    if moves is None:
        return x
    return jnp.take_along_axis(x, jnp.maximum(moves, 0), axis=-1)


def to_actions(x: jax.Array, moves: jax.Array | None, num_actions: int, fill: Any = 0) -> jax.Array:
    """[..., A]: `x` [..., W] written at each slot's action, `fill` at the actions no slot holds."""
    if moves is None:
        return x
    lead = x.shape[:-1]
    flat_x, flat_moves = x.reshape(-1, x.shape[-1]), moves.reshape(-1, moves.shape[-1])
    rows = jnp.arange(flat_x.shape[0])[:, None]
    out = jnp.full((flat_x.shape[0], num_actions), fill, x.dtype)
    out = out.at[rows, jnp.where(flat_moves >= 0, flat_moves, num_actions)].set(flat_x, mode="drop")
    return out.reshape(*lead, num_actions)


def slot_action(moves: jax.Array | None, slot: jax.Array) -> jax.Array:
    """int32 [B]: the game action in slot `slot` [B] (-1 stays -1) of `moves` [B, W]."""
    if moves is None:
        return slot.astype(jnp.int32)
    action = jnp.take_along_axis(moves, jnp.maximum(slot, 0)[:, None].astype(jnp.int32), axis=1)[:, 0]
    return jnp.where(slot >= 0, action, -1).astype(jnp.int32)


def slot_of(moves: jax.Array | None, action: jax.Array) -> jax.Array:
    """int32 [...]: the slot holding `action` [...] (a game action; -1 stays -1) in `moves` [..., W]; -1 where no
    slot holds it (an illegal move)."""
    if moves is None:
        return action.astype(jnp.int32)
    hit = (moves == action[..., None]) & (action[..., None] >= 0)
    return jnp.where(hit.any(axis=-1), jnp.argmax(hit, axis=-1), -1).astype(jnp.int32)


def node_moves(game: Game, tree: mctx.Tree, node: jax.Array, get_state: Any = None) -> jax.Array | None:
    """int32 [B, W]: the legal-action list of node `node` [B] of each tree of `tree` (from the state in its
    embedding; `get_state` maps an embedding to its GameState, as for a parent-aware evaluator's (states, context)),
    or None for a game searched over its whole action space."""
    if game.search_width is None:
        return None
    batch = jnp.arange(node.shape[0])
    embedding = jax.tree.map(lambda x: x[batch, jnp.maximum(node, 0)], tree.embeddings)
    states = embedding if get_state is None else get_state(embedding)
    return search_moves(game, states)
