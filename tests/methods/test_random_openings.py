"""Random openings: k uniformly random legal moves (k uniform in 0..K) after each start of the wrapped seam, never
ending the game, with the wrapped seam's own draws untouched."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.games import make_game
from azjax.methods.alphazero import NewGames
from azjax.methods.random_openings import RandomOpenings, random_opening

GAME = make_game("connect_four")


def _new_games(n: int, seed: int = 0):
    return jax.vmap(GAME.init)(jax.random.split(jax.random.key(seed), n))


def test_an_opening_plays_zero_to_k_legal_moves_uniformly_and_leaves_the_game_live() -> None:
    n, k = 4000, 4
    games, played = jax.jit(functools.partial(random_opening, GAME, max_plies=k))(jax.random.key(1), _new_games(n))
    played = np.asarray(played)
    pieces = np.asarray(games.observation.sum(axis=(1, 2, 3)))
    np.testing.assert_array_equal(pieces, played)  # each move played is one disc on the board
    np.testing.assert_array_equal(np.asarray(games.move_number), played)
    assert not np.asarray(games.terminated).any()
    counts = np.bincount(played, minlength=k + 1)
    assert counts.size == k + 1 and np.all(np.abs(counts / n - 1 / (k + 1)) < 0.03), counts
    # The moves are spread over the columns, not always the same one.
    first_moves = np.asarray(games.observation[played == 1].sum(axis=(1, 3)).argmax(-1))
    assert len(set(first_moves.tolist())) == GAME.num_actions


def test_an_opening_never_ends_the_game() -> None:
    # Long openings from near-full boards: a random move would often win; the opening skips those.
    games, played = jax.jit(functools.partial(random_opening, GAME, max_plies=40))(jax.random.key(2), _new_games(512))
    assert not np.asarray(games.terminated).any()
    assert np.asarray(played).max() > 20


def test_the_wrapper_keeps_the_wrapped_seams_starts_and_adds_the_opening() -> None:
    states = _new_games(64, seed=3)
    ended = jnp.arange(64) % 3 == 0
    inner = NewGames(GAME)
    seam = RandomOpenings(inner=inner, game=GAME, max_plies=6)
    games, _, _, stats = jax.jit(seam.restart)(jax.random.key(5), None, None, states, None, None, None, ended)
    plain, *_ = inner.restart(jax.random.key(5), None, None, states, None, None, None, ended)
    _, played = random_opening(GAME, jax.random.fold_in(jax.random.key(5), 0x0DE), plain, 6)
    played = np.asarray(played)
    np.testing.assert_array_equal(np.asarray(games.move_number), played)
    untouched = played == 0  # no random move: exactly the wrapped seam's game
    for x, y in zip(jax.tree.leaves(games), jax.tree.leaves(plain), strict=True):
        assert np.asarray(x)[untouched].tobytes() == np.asarray(y)[untouched].tobytes()
    assert int(stats["opening_plies_sum"]) == played[np.asarray(ended)].sum()
    assert seam.columns == ("opening_plies",)
    assert seam.row({"games": 4, "opening_plies_sum": 10}) == {"opening_plies": 2.5}


def test_an_opening_needs_at_least_one_ply() -> None:
    with pytest.raises(ValueError, match="max_plies >= 1"):
        RandomOpenings(inner=NewGames(GAME), game=GAME, max_plies=0)


def test_the_build_wraps_the_configs_starts_only_when_switched_on() -> None:
    from azjax.build import game_starts, make_network
    from azjax.config import preset
    from azjax.methods.go_exploit import ArchiveStarts

    off = preset("connect_four")
    net = make_network(off, GAME)
    assert isinstance(game_starts(off, GAME, net), NewGames)  # 0 plies: AlphaZero's starts, no wrapper
    on = game_starts(off.replace(random_opening_plies=8, start_state_prob=0.5), GAME, net)
    assert isinstance(on, RandomOpenings) and on.max_plies == 8 and isinstance(on.inner, ArchiveStarts)
