"""azjax's chess rules (`azjax.games.chess_rules`): against python-chess (legal moves and game ends at every ply of
random games, perft of the standard test positions) and against pgx's own rules (every field, every ply, wherever
pgx is right)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest
from pgx._src.games import chess as pgx_chess

from azjax.games import chess_rules as cr

# chessprogramming.org's perft positions with their published node counts at depths 1..4 (python-chess's move
# generator gives the same at depths 1-3).
PERFT = {
    "initial": ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", [20, 400, 8902, 197281]),
    "kiwipete": ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", [48, 2039, 97862, 4085603]),
    "position_3": ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", [14, 191, 2812, 43238]),
    "position_4": ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", [6, 264, 9467, 422333]),
    "position_5": ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", [44, 1486, 62379, 2103487]),
    "position_6": ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
                   [46, 2079, 89890, 3894594]),
}
MOVES_218 = ["R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1",
             "3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1"]
KNIGHT_DANCE = ["g1f3", "g8f6", "f3g1", "f6g8"]


@pytest.fixture(scope="module")
def env() -> cr.ChessEnv:
    return cr.ChessEnv(max_plies=None)


@pytest.fixture(scope="module")
def step(env: cr.ChessEnv) -> Any:
    return jax.jit(jax.vmap(env.step))


def _stack(states: list[Any]) -> Any:
    return jax.tree.map(lambda *a: jnp.stack(a), *states)


def _row(states: Any, i: int) -> Any:
    return jax.tree.map(lambda a: a[i], states)


def _ucis(state: Any) -> set[str]:
    """One unbatched state's legal moves in UCI."""
    board, color = np.asarray(state._x.board), int(state._x.color)
    return {cr.action_to_uci(int(a), board, color) for a in np.asarray(state.legal_actions) if a >= 0}


def _play(step: Any, states: Any, actions: list[str]) -> Any:
    """A batch of one played through UCI moves (host side)."""
    for uci in actions:
        state = _row(states, 0)
        action = next(int(a) for a in np.asarray(state.legal_actions) if a >= 0
                      and cr.action_to_uci(int(a), np.asarray(state._x.board), int(state._x.color)) == uci)
        states = step(states, jnp.int32([action]))
    return states


def _random_games(env: cr.ChessEnv, states: Any, key: jax.Array, plies: int) -> tuple[Any, Any]:
    """Every state of random games from `states` [B] (the first included) and the actions played [plies, B]."""
    def body(states: Any, k: jax.Array) -> tuple[Any, tuple[Any, Any]]:
        count = (states.legal_actions >= 0).sum(-1)
        pick = jax.random.randint(k, count.shape, 0, jnp.maximum(count, 1))
        actions = jnp.take_along_axis(states.legal_actions, pick[:, None], 1)[:, 0].astype(jnp.int32)
        after = jax.vmap(env.step)(states, jnp.maximum(actions, 0))
        return after, (after, actions)

    _, (trajectory, actions) = jax.lax.scan(body, states, jax.random.split(key, plies))
    return jax.tree.map(lambda first, rest: jnp.concatenate([first[None], rest]), states, trajectory), actions


def _repetition_key(board: chess.Board) -> tuple[Any, ...]:
    # pgx's hash: pieces, side to move, castling rights and the en passant square after every double step (FIDE's
    # rule and python-chess's claim count the square only when an en passant capture is legal).
    return board.board_fen(), board.turn, board.clean_castling_rights(), board.ep_square


def _check_against_python_chess(trajectory: Any, actions: Any, fens: list[str]) -> Counter[str]:
    """Replays each game with python-chess, checking the legal moves and the game's end and rewards at every ply
    (pgx's conventions: threefold repetition and halfmove clock >= 100 end the game at once). Returns how the
    games ended."""
    ends: Counter[str] = Counter()
    host = jax.tree.map(np.asarray, trajectory)
    actions = np.asarray(actions)
    for g, fen in enumerate(fens):
        board = chess.Board(fen)
        seen = Counter([_repetition_key(board)])
        for ply in range(actions.shape[0] + 1):
            state = jax.tree.map(lambda a, p=ply, g=g: a[p, g], host)
            assert _ucis(state) == {m.uci() for m in board.legal_moves}, (board.fen(), ply)
            assert cr.to_fen(state).split()[:4] == board.fen(en_passant="fen").split()[:4]
            reasons = {"checkmate": board.is_checkmate(), "stalemate": board.is_stalemate(),
                       "insufficient material": board.is_insufficient_material(),
                       "threefold repetition": seen[_repetition_key(board)] >= 3,
                       "fifty moves": board.halfmove_clock >= 100}
            over = any(reasons.values())
            assert bool(state.terminated) == over, (board.fen(), ply, reasons)
            loser = int(state._player_order[int(board.turn == chess.BLACK)])
            expected = np.zeros(2) if not reasons["checkmate"] else np.where(np.arange(2) == loser, -1.0, 1.0)
            if ply > 0:
                assert np.array_equal(state.rewards, expected), (board.fen(), ply)
            if over:
                ends.update(r for r, hit in reasons.items() if hit)
                break
            if ply == actions.shape[0]:
                break
            action = int(actions[ply, g])
            board.push_uci(cr.action_to_uci(action, np.asarray(state._x.board), int(state._x.color)))
            seen[_repetition_key(board)] += 1
    return ends


# ---------------------------------------------------------------- python-chess, ply by ply


@pytest.fixture(scope="module")
def play_random(env: cr.ChessEnv) -> Any:
    return jax.jit(lambda s, k: _random_games(env, s, k, 400))


def test_random_games_have_python_chess_s_legal_moves_and_ends_at_every_ply(env, play_random):
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(1), 8))
    trajectory, actions = play_random(states, jax.random.key(2))
    ends = _check_against_python_chess(trajectory, actions, [cr.STANDARD_FEN] * 8)
    assert sum(ends.values()) >= 1  # some games end within 400 plies


def test_fen_starts_near_each_ending_end_as_python_chess_says(env, play_random):
    fens = ["8/8/8/4k3/8/8/4K3/4R3 w - - 95 80",  # the fifty-move rule
            "7k/8/8/8/8/8/6R1/K6R w - - 0 1",  # mates and stalemates come fast
            "7k/5Q2/8/8/8/8/8/K7 w - - 0 1",  # stalemate or mate
            "8/8/4k3/8/8/3K4/8/2b1B3 w - - 0 1",  # bishops on one colour
            "6k1/8/8/8/8/8/1n6/K7 w - - 0 1",  # king and knight against king (insufficient at once)
            "7k/8/8/8/8/8/8/K5NN w - - 98 1",  # two knights: play on until the fifty-move rule
            "k7/8/K7/8/8/8/8/7R b - - 0 1",  # kings shuffling: repetitions
            "rnbqkbnr/pppp1ppp/8/4pP2/8/8/PPPPP1PP/RNBQKBNR w KQkq e6 0 3"]  # en passant on the first move
    states = _stack([cr.from_fen(f, max_plies=None) for f in fens])
    trajectory, actions = play_random(states, jax.random.key(3))
    ends = _check_against_python_chess(trajectory, actions, fens)
    assert {"fifty moves", "insufficient material"} <= set(ends), ends


@pytest.mark.slow
def test_long_random_games_without_a_ply_cap_end_by_chess_s_own_rules(env):
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(4), 32))
    trajectory, actions = jax.jit(lambda s, k: _random_games(env, s, k, 1200))(states, jax.random.key(5))
    assert np.asarray(trajectory.terminated[-1]).all()  # the fifty-move rule ends every game
    ends = _check_against_python_chess(trajectory, actions, [cr.STANDARD_FEN] * 32)
    assert {"checkmate", "fifty moves", "insufficient material"} <= set(ends), ends


# ---------------------------------------------------------------- special positions


def test_a_position_with_218_legal_moves_gets_all_of_them(step):
    for fen in MOVES_218:
        state = cr.from_fen(fen)
        assert int((np.asarray(state.legal_actions) >= 0).sum()) == 218
        assert _ucis(state) == {m.uci() for m in chess.Board(fen).legal_moves}
        assert int(state.legal_action_mask.sum()) == 218
        theirs = pgx_chess._legal_action_mask(pgx_chess.GameState(board=jnp.asarray(state._x.board, jnp.int32),
                                                                   castling_rights=jnp.zeros((2, 2), bool)))
        assert int(theirs.sum()) == 200  # pgx keeps 200 of them


def test_legal_actions_are_sorted_and_padded_with_minus_one():
    state = cr.from_fen(PERFT["kiwipete"][0])
    actions = np.asarray(state.legal_actions)
    assert actions.shape == (cr.MAX_LEGAL_MOVES,) and actions.dtype == np.int16
    legal = actions[actions >= 0]
    assert len(legal) == 48 and (np.diff(legal) > 0).all() and (actions[48:] == -1).all()
    assert np.array_equal(np.flatnonzero(np.asarray(state.legal_action_mask)), legal)


def test_the_start_position_reached_a_third_time_ends_the_game_drawn(env, step):
    states = _stack([env.init(jax.random.key(0))])
    states = _play(step, states, KNIGHT_DANCE)
    assert not bool(states.terminated[0])
    states = _play(step, states, KNIGHT_DANCE)
    assert bool(states.terminated[0]) and np.array_equal(states.rewards[0], [0.0, 0.0])
    assert bool(states.legal_action_mask[0].all())  # pgx's convention for finished games


def test_a_fen_start_has_no_invented_history_and_repeats_count_from_it(step):
    fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 10 20"
    state = cr.from_fen(fen)
    assert not np.asarray(state._x.board_history[1:]).any() and not np.asarray(state._x.hash_history[1:]).any()
    assert np.array_equal(state._x.hash_history[0], cr.zobrist_hash(state._x.board, state._x.color,
                                                                     state._x.castling_rights, state._x.en_passant))
    assert (int(state._x.halfmove_count), int(state._x.fullmove_count)) == (10, 20)
    assert cr.to_fen(state) == fen
    rook_dance = ["a1a2", "a8a7", "a2a1", "a7a8"]  # castling rights lost: not the start position again
    states = _play(step, _stack([state]), rook_dance * 2)
    assert not bool(states.terminated[0])
    king_dance = ["e1f1", "e8f8", "f1e1", "f8e8"]
    states = _play(step, _stack([cr.from_fen("4k3/8/8/8/8/8/8/R3K3 w - - 0 1")]), king_dance * 2)
    assert bool(states.terminated[0])


@pytest.mark.parametrize("fen", [
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
    "8/8/8/K2pP2r/8/8/8/7k w - d6 0 1",  # en passant would uncover a check along the rank
    "8/8/8/2k5/3Pp3/8/8/4K2B b - d3 0 1",  # en passant from check: the checker taken
    "4k3/8/8/1B6/3pP3/8/8/4K3 b - e3 0 1",  # the capturing pawn pinned on the diagonal
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",  # castling both ways, both sides
    "r3k2r/8/8/8/8/5b2/8/R3K2R w KQkq - 0 1",  # king-side transit square attacked
    "r3k2r/8/8/8/4r3/8/8/R3K2R w KQkq - 0 1",  # in check: no castling
    "1r2k2r/8/8/8/8/8/8/R3K2R b Kk - 0 1",  # black to move, some rights gone
    "4k3/1P6/8/8/8/8/6p1/4K2R w K - 0 1",  # promotions and underpromotions
])
def test_fen_starts_have_python_chess_s_moves_and_fen(fen):
    state = cr.from_fen(fen)
    assert _ucis(state) == {m.uci() for m in chess.Board(fen).legal_moves}
    assert cr.to_fen(state) == fen
    assert cr.to_fen(cr.from_board(chess.Board(fen))) == fen


def _perft(step: Any, fen: str, depth: int) -> int:
    """Leaf nodes at `depth`: positions expanded level by level in batches."""
    states = _stack([cr.from_fen(fen, max_plies=None)])
    for _ in range(depth - 1):
        actions = np.asarray(states.legal_actions)
        game, slot = np.nonzero(actions >= 0)
        n = len(game)
        size = max(64, 1 << (n - 1).bit_length())  # few batch shapes: few compiles
        rows = np.concatenate([game, np.zeros(size - n, np.int64)])
        moves = np.concatenate([actions[game, slot], np.zeros(size - n, np.int16)]).astype(np.int32)
        parents = jax.tree.map(lambda a, r=rows: a[r], states).replace(terminated=jnp.zeros(size, bool))
        states = jax.tree.map(lambda a, m=n: a[:m], step(parents, jnp.asarray(moves)))
    return int((np.asarray(states.legal_actions) >= 0).sum())


@pytest.mark.parametrize("name", sorted(PERFT))
def test_perft_of_the_standard_positions_to_depth_3(step, name):
    fen, counts = PERFT[name]
    assert [_perft(step, fen, d) for d in (1, 2, 3)] == counts[:3]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PERFT))
def test_perft_of_the_standard_positions_to_depth_4(step, name):
    fen, counts = PERFT[name]
    assert _perft(step, fen, 4) == counts[3]


# ---------------------------------------------------------------- pgx, field by field


# Made at import, not inside a trace: pgx.chess's State keeps an array as a field default, which becomes a leaked
# tracer if the module is first imported while jit traces.
_PGX_CHESS = pgx.make("chess")


def _lockstep(key: jax.Array, num_games: int, plies: int) -> tuple[Any, Any]:
    """The same random games (the same init keys and moves) under azjax's rules and pgx's: every state of both."""
    ours_env, theirs_env = cr.ChessEnv(), _PGX_CHESS

    def body(carry: tuple[Any, Any], k: jax.Array) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
        ours, theirs = carry
        count = (ours.legal_actions >= 0).sum(-1)
        pick = jax.random.randint(k, count.shape, 0, jnp.maximum(count, 1))
        actions = jnp.maximum(jnp.take_along_axis(ours.legal_actions, pick[:, None], 1)[:, 0].astype(jnp.int32), 0)
        ours, theirs = jax.vmap(ours_env.step)(ours, actions), jax.vmap(theirs_env.step)(theirs, actions)
        return (ours, theirs), (ours, theirs)

    keys = jax.random.split(key, num_games)
    start = (jax.vmap(ours_env.init)(keys), jax.vmap(theirs_env.init)(keys))
    _, (ours, theirs) = jax.lax.scan(body, start, jax.random.split(key, plies))
    observation = jax.vmap(lambda s: s.observation)(ours)  # [plies, B, 8, 8, 119]
    mask = jax.vmap(lambda s: s.legal_action_mask)(ours)
    return (ours, observation, mask), theirs


def _compare_with_pgx(ours: Any, observation: Any, mask: Any, theirs: Any) -> int:
    """Asserts every comparable field equal at every ply until pgx is known to be wrong in a game (over 200 legal
    moves; the start position again, whose hash pgx stores wrongly). Returns the plies compared."""
    ours, theirs = jax.tree.map(np.asarray, ours), jax.tree.map(np.asarray, theirs)
    observation, mask = np.asarray(observation), np.asarray(mask)
    plies, games = ours.terminated.shape
    start_hash = np.asarray(cr.ChessEnv().init(jax.random.key(0))._x.hash_history[0])
    init_hash = np.asarray(pgx_chess.INIT_ZOBRIST_HASH)
    compared = 0
    for g in range(games):
        for t in range(plies):
            x, y = (jax.tree.map(lambda a, t=t, g=g: a[t, g], s._x) for s in (ours, theirs))
            if (ours.legal_actions[t, g] >= 0).sum() > 200 or (x.hash_history == start_hash).all(-1).sum() > 1:
                break
            assert np.array_equal(observation[t, g], theirs.observation[t, g]), (g, t)
            assert np.array_equal(mask[t, g], theirs.legal_action_mask[t, g]), (g, t)
            for field in ("rewards", "terminated", "current_player", "_step_count", "_player_order"):
                assert np.array_equal(getattr(ours, field)[t, g], getattr(theirs, field)[t, g]), (field, g, t)
            for field in ("color", "board", "castling_rights", "en_passant", "halfmove_count", "fullmove_count",
                          "step_count", "board_history"):
                assert np.array_equal(getattr(x, field), getattr(y, field)), (field, g, t)
            pgx_hashes = np.where((y.hash_history == init_hash).all(-1, keepdims=True), start_hash, y.hash_history)
            assert np.array_equal(x.hash_history, pgx_hashes[:cr.HASH_WINDOW]), (g, t)
            compared += 1
    return compared


def test_random_games_equal_pgx_s_in_every_field_at_every_ply():
    ours, theirs = jax.jit(lambda k: _lockstep(k, 4, 160))(jax.random.key(6))
    assert _compare_with_pgx(*ours, theirs) > 500


@pytest.mark.slow
def test_long_random_games_equal_pgx_s_in_every_field_at_every_ply():
    ours, theirs = jax.jit(lambda k: _lockstep(k, 32, 520))(jax.random.key(7))
    assert np.asarray(theirs.terminated[-1]).all()  # every game reached its end (or pgx's 512-ply cap)
    assert _compare_with_pgx(*ours, theirs) > 5000


def test_a_finished_game_stays_as_it_is_and_an_illegal_move_loses(env, step):
    states = _play(step, _stack([cr.from_fen("7k/8/6K1/8/8/8/8/R7 w - - 0 1")]), ["a1a8"])  # mate
    assert bool(states.terminated[0]) and np.array_equal(states.rewards[0], [1.0, -1.0])
    again = step(states, jnp.int32([0]))
    assert np.array_equal(again.rewards[0], [0.0, 0.0])
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(again._x), jax.tree.leaves(states._x), strict=True))
    start = _stack([env.init(jax.random.key(1))])
    lost = step(start, jnp.int32([0]))  # a1 has a rook with nowhere to go: illegal
    mover = int(start.current_player[0])
    assert bool(lost.terminated[0]) and lost.rewards[0, mover] == -1.0 and lost.rewards[0, 1 - mover] == 1.0


def test_the_state_is_small_and_its_observation_is_computed_on_demand(env):
    state = env.init(jax.random.key(0))
    size = sum(a.nbytes for a in jax.tree.leaves(state))
    assert size < 3000  # pgx's State: ~40 KB, 30 KB of it the observation
    assert "observation" not in {f.name for f in dataclasses.fields(state)}
    batched = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 3))
    assert batched.observation.shape == (3, 8, 8, 119) and batched.legal_action_mask.shape == (3, 4672)
    nested = jax.vmap(jax.vmap(env.init))(jax.random.split(jax.random.key(0), 6).reshape(2, 3))
    assert nested.observation.shape == (2, 3, 8, 8, 119)


def test_nested_vmap_gives_the_moves_of_a_single_vmap(env):
    keys = jax.random.split(jax.random.key(3), 4)
    states = jax.vmap(env.init)(keys)
    actions = jnp.maximum(states.legal_actions[:, 5].astype(jnp.int32), 0)
    once = jax.vmap(env.step)(states, actions)
    twice = jax.vmap(jax.vmap(env.step))(jax.tree.map(lambda a: a.reshape(2, 2, *a.shape[1:]), states),
                                          actions.reshape(2, 2))
    assert np.array_equal(np.asarray(once.legal_actions), np.asarray(twice.legal_actions).reshape(4, -1))


def test_the_ply_cap_is_a_parameter():
    capped = cr.ChessEnv(max_plies=2)
    states = jax.vmap(capped.init)(jax.random.split(jax.random.key(0), 1))
    states = _play(jax.jit(jax.vmap(capped.step)), states, ["e2e4", "e7e5"])
    assert bool(states.terminated[0]) and np.array_equal(states.rewards[0], [0.0, 0.0])


def test_the_to_square_table_is_pgx_s():
    assert np.array_equal(cr.TO_SQUARE, np.asarray(pgx_chess.FROM_PLANE))
