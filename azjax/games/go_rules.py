"""pgx's Go rules with the same results, computed with less work: positions, legal moves, observations and
rewards equal pgx's bit for bit (`tests/games/test_go_rules.py` plays random games with both).

Where pgx spends its time, and what changes here:
  * liberties per chain: pgx sums, for each of the N points as a chain id, over all N points (O(N^2)
    twice a move: capture and legal moves); `chain_liberties` adds each point's counts into its chain
    with one segment sum (O(N));
  * neighbours: pgx gathers each point's four neighbours through an [N, 4] index table (legal moves, liberties);
    `neighbour_sum` adds four shifted slices of the padded board, several times cheaper on XLA's CPU backend;
  * the area score: pgx flood-fills the board on every move and then discards the score unless the game
    is over; `GoRules.rewards` fills only finished boards (the others converge at once), which lets a
    batch's fill stop early.

`go_env(size)` is pgx's Go environment with these rules in place of pgx's own.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pgx.go
from jax import Array, lax
from pgx._src.games import go as pgx_go


def neighbour_sum(values: Array, size: int) -> Array:
    """int [..., N] -> [..., N]: each point's sum of `values` over its on-board neighbours (up to 4).

    Four static slices of the zero-padded board: on XLA's CPU backend a gather through pgx's [N, 4] index
    table costs several times as much.
    """
    board = values.reshape(*values.shape[:-1], size, size)
    padded = jnp.pad(board, [(0, 0)] * (board.ndim - 2) + [(1, 1), (1, 1)])
    around = padded[..., :-2, 1:-1] + padded[..., 2:, 1:-1] + padded[..., 1:-1, :-2] + padded[..., 1:-1, 2:]
    return around.reshape(values.shape)


def chain_liberties(board: Array, size: int) -> tuple[Array, Array, Array]:
    """Per chain id (index id - 1, [N] each): pseudo-liberties, and the sum and the sum of squares of their
    1-based point indices (a chain is in atari when sum^2 == sum_of_squares * count). pgx's `_count`.

    board: int32 [N], pgx's board (+-(representative point + 1) per stone, 0 empty).
    """
    n = size * size
    ids = jnp.abs(board)
    empty = ids == 0
    index = jnp.arange(1, n + 1)
    per_point = jnp.stack([empty.astype(jnp.int32), jnp.where(empty, index, 0), jnp.where(empty, index**2, 0)])
    around = neighbour_sum(per_point, size)  # [3, N]: what touches each point
    per_chain = jax.vmap(lambda v: jax.ops.segment_sum(v, ids, num_segments=n + 1)[1:])(around)
    return per_chain[0], per_chain[1], per_chain[2]


def _in_atari(count: Array, index_sum: Array, index_squares: Array) -> Array:
    return index_sum**2 == index_squares * count


def _play_stone(state: pgx_go.GameState, action: Array, size: int) -> pgx_go.GameState:
    """Places the mover's stone at `action`: captures, ko point, chain merge (pgx's `_apply_action`)."""
    state = state._replace(consecutive_pass_count=0)
    my_sign, opp_sign = pgx_go._signs(state.color)

    neighbours = pgx_go._adj_ixs(action, size)
    neighbour_ids = state.board[neighbours]
    count, index_sum, index_squares = chain_liberties(state.board, size)
    chain = jnp.abs(neighbour_ids) - 1
    last_liberty = index_squares[chain] // index_sum[chain] - 1
    captured_chain = ((neighbours != -1) & (neighbour_ids * opp_sign > 0)
                      & _in_atari(count[chain], index_sum[chain], index_squares[chain]) & (last_liberty == action))
    captured = (state.board[:, None] == neighbour_ids) & captured_chain[None, :]  # [N, 4]
    num_captured = jnp.count_nonzero(captured)
    ko_may_occur = ((neighbours == -1) | (neighbour_ids * opp_sign > 0)).all()
    first_captured = jnp.nonzero(captured_chain, size=1)[0][0]
    state = state._replace(
        board=jnp.where(captured.any(axis=-1), 0, state.board),
        num_captured=state.num_captured.at[state.color].add(num_captured),
        ko=lax.select(ko_may_occur & (num_captured == 1), neighbours[first_captured], -1),
    )

    board = state.board.at[action].set((action + 1) * my_sign)
    own = (neighbours != -1) & (board[neighbours] * my_sign > 0)
    own_ids = board[neighbours]
    new_id = board[action]
    merged_id = jnp.minimum(jnp.abs(new_id), jnp.min(jnp.where(own, jnp.abs(own_ids), 9999))) * my_sign
    joins = (board == new_id) | (own[None, :] & (board[:, None] == own_ids[None, :])).any(axis=-1)
    return state._replace(board=jnp.where(joins, merged_id, board))


class GoRules(pgx_go.Game):
    """pgx's `go.Game` with `chain_liberties` and scoring of finished boards only."""

    def step(self, state: pgx_go.GameState, action: Array) -> pgx_go.GameState:
        state = state._replace(ko=jnp.int32(-1))
        state = lax.cond(action < self.size * self.size, lambda: _play_stone(state, action, self.size),
                         lambda: pgx_go._apply_pass(state))
        history = jnp.roll(state.board_history, self.size**2)
        state = state._replace(board_history=history.at[0].set(jnp.clip(state.board, -1, 1).astype(jnp.int32)))
        state = state._replace(hash_history=state.hash_history.at[state.step_count].set(pgx_go._compute_hash(state)))
        state = state._replace(is_psk=pgx_go._is_psk(state))
        return state._replace(step_count=state.step_count + 1)

    def legal_action_mask(self, state: pgx_go.GameState) -> Array:
        empty = state.board == 0
        my_sign, opp_sign = pgx_go._signs(state.color)
        count, index_sum, index_squares = chain_liberties(state.board, self.size)
        chain = jnp.abs(state.board) - 1
        atari = _in_atari(count[chain], index_sum[chain], index_squares[chain])
        safe_own = (state.board * my_sign > 0) & ~atari
        capturable = (state.board * opp_sign > 0) & atari
        breathes = neighbour_sum((empty | capturable | safe_own).astype(jnp.int32), self.size) > 0
        mask = empty & breathes
        mask = lax.select(state.ko == -1, mask, mask.at[state.ko].set(False))
        return jnp.append(mask, True)

    def rewards(self, state: pgx_go.GameState) -> Array:
        # pgx scores every board and keeps the score of finished ones only: score only those.
        finished = self.is_terminal(state)
        return super().rewards(state._replace(board=jnp.where(finished, state.board, 0)))


def go_env(size: int, max_moves: int | None = None) -> pgx.go.Go:
    """pgx's Go environment (komi 0: azjax scores with each game's own komi) running `GoRules`, ending a game
    after `max_moves` moves (default pgx's, size² x 2). The observation does not depend on the cap; the state's
    superko hash history holds one row per move up to it."""
    env = pgx.go.Go(size=size, komi=0.0, max_terminal_steps=max_moves)
    env._game = GoRules(size=size, komi=0.0, max_termination_steps=max_moves)
    return env

