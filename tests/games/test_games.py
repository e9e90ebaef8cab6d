"""Games: the registry, Go scoring with a komi per game (checked against hand counts and GNU Go), chess
move notation and legality (checked against python-chess), Connect Four notation.

Every jitted function is built once per module (fixtures below) to keep compile time down.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable
from typing import Any

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from outside_programs import outside_program

from azjax.games import (
    DEFAULT_KOMI,
    GAMES,
    ODDS_FENS,
    STANDARD_FEN,
    Chess,
    Game,
    GameState,
    board_lead_black,
    make_game,
    play_max_moves,
)

Step = Callable[[GameState, Any], GameState]

# ---------------------------------------------------------------- registry


@pytest.mark.parametrize("name", GAMES)
def test_make_game_every_id(name: str) -> None:
    game = make_game(name)
    assert game.name == name
    state = game.init(jax.random.PRNGKey(0))
    assert state.legal_action_mask.shape == (game.num_actions,)
    assert state.observation.shape == game.observation_shape
    assert game.is_go == name.startswith("go_")
    assert float(state.komi) == DEFAULT_KOMI.get(name, 0.0) == game.komi
    assert not bool(state.terminated)
    assert int(state.move_number) == 0


def test_what_each_game_knows() -> None:
    """The knowledge host code asks of a game (komi, scores, FEN, colour names, GTP case, record format) instead of
    its type."""
    c4, go7, ch = make_game("connect_four"), make_game("go_7x7"), make_game("chess")
    assert [(g.has_komi, g.scored, g.has_fen, g.notation_reads_position) for g in (c4, go7, ch)] == [
        (False, False, False, False), (True, True, False, False), (False, False, True, True)]
    assert [g.record_format for g in (c4, go7, ch)] == ["text", "sgf", "pgn"]
    assert go7.check_komi(5) == 5.0
    for komi in (float("nan"), 99.0):
        with pytest.raises(ValueError, match="unreasonable komi"):
            go7.check_komi(komi)
    for game in (c4, ch):
        with pytest.raises(ValueError, match=f"komi applies to Go only, not {game.name}"):
            game.check_komi(7.5)
        with pytest.raises(ValueError, match=f"scoring applies to Go only, not {game.name}"):
            game.black_margin(game.start_position())
    for game in (c4, go7):
        with pytest.raises(ValueError, match=f"FEN positions apply to chess only, not {game.name}"):
            game.start_position(fen=STANDARD_FEN)
        with pytest.raises(ValueError, match=f"FEN applies to chess only, not {game.name}"):
            game.fen(game.start_position())
    assert float(go7.start_position(komi=3.5).komi) == 3.5
    assert float(go7.black_margin(go7.start_position(komi=3.5))) == -3.5  # the empty board: komi only
    black_to_move = ch.start_position(fen=STANDARD_FEN.replace(" w ", " b "))
    assert ch.fen(black_to_move) == STANDARD_FEN.replace(" w ", " b ")
    # colour names: GTP's "b"/"w" from the game's own side to move, not the number of moves
    assert ch.side_to_move(ch.start_position(), 1) == "w" and ch.side_to_move(black_to_move, 0) == "b"
    assert go7.side_to_move(go7.start_position(), 1) == "b"
    assert c4.side_to_move(c4.start_position(), 0) == "b" and c4.side_to_move(c4.start_position(), 1) == "w"
    assert go7.move_to_gtp("pass") == "PASS" and go7.move_from_gtp("D4") == "d4"
    assert ch.move_to_gtp("e7e8q") == "e7e8q" and c4.move_from_gtp("4") == "4"


def test_make_game_errors() -> None:
    with pytest.raises(ValueError, match="'go_19x19'"):
        make_game("go_19x19")
    for name in ("connect_four", "chess"):
        with pytest.raises(ValueError, match=f"komi.*{name}"):
            make_game(name, komi=7.5)
    for komi in (7.0, 7.25, 0.0, -2.0):
        with pytest.raises(ValueError, match="half-integer"):
            make_game("go_9x9", komi=komi)
    with pytest.raises(ValueError, match="start"):
        make_game("go_7x7", start="queen_odds")
    assert make_game("go_9x9", komi=-0.5).komi == -0.5
    assert make_game("go_7x7", komi=0.5).komi == 0.5


# ---------------------------------------------------------------- Go: the move cap


def test_played_go_allows_far_more_moves_than_pgx_s_cap_that_self_play_keeps() -> None:
    """Engines and arenas (`game_named`) play Go past pgx's size² x 2 moves with the same network input; self-play
    (`config_game`) keeps pgx's cap. (Chess: the next test.)"""
    from azjax.build import config_game, game_named
    from azjax.config import Config

    for name, pgx_cap in (("go_7x7", 98), ("go_9x9", 162)):
        played, selfplay = game_named(name), config_game(Config(game=name))
        assert selfplay.max_moves == make_game(name).max_moves == pgx_cap
        assert played.max_moves == play_max_moves(name) == 4 * pgx_cap
        assert played.observation_shape == selfplay.observation_shape and played.num_actions == selfplay.num_actions
    with pytest.raises(ValueError, match="max_moves applies to Go and chess"):
        make_game("connect_four", max_moves=600)


def test_played_chess_runs_past_pgx_s_512_plies_that_self_play_keeps() -> None:
    """Engines and arenas play chess to its own end (a cap of `CHESS_PLAY_PLIES`, far above a real game) with the
    same network input; self-play keeps pgx's 512-ply draw, below which its adjudication must fall."""
    from azjax.build import config_game, game_named
    from azjax.config import Config

    played, selfplay = game_named("chess"), config_game(Config(game="chess"))
    assert selfplay.max_moves == selfplay.env.max_plies == 512
    assert played.max_moves == played.env.max_plies == play_max_moves("chess") == 2048
    assert played.observation_shape == selfplay.observation_shape and played.num_actions == selfplay.num_actions
    with pytest.raises(ValueError, match="below the ply cap"):
        make_game("chess", max_moves=100, adjudicate_plies=100)


def test_a_chess_game_stopped_by_the_ply_cap_is_cut_short_and_one_ended_by_the_rules_is_not() -> None:
    """Knights out and back: at a 6-ply cap the game ends drawn, cut short (no position has occurred three times).
    Fool's mate at a 4-ply cap: the mate on the cap's ply is the game's own end. A running game is neither."""
    game = make_game("chess", max_moves=6)
    step, cut_short = jax.jit(game.step), jax.jit(game.cut_short)

    def play(moves: list[str]) -> GameState:
        state = game.init(jax.random.key(0))
        for move in moves:
            assert not bool(state.terminated)
            state = step(state, game.parse_action(state, move))
        return state

    shuffled = play(["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6"])
    assert bool(shuffled.terminated) and bool(cut_short(shuffled))
    np.testing.assert_array_equal(np.asarray(shuffled.rewards), [0.0, 0.0])
    running = play(["g1f3", "g8f6", "f3g1"])
    assert not bool(running.terminated) and not bool(cut_short(running))
    game = make_game("chess", max_moves=4)
    step, cut_short = jax.jit(game.step), jax.jit(game.cut_short)
    mated = play(["f2f3", "e7e5", "g2g4", "d8h4"])
    assert bool(mated.terminated) and not bool(cut_short(mated))
    assert sorted(np.asarray(mated.rewards).tolist()) == [-1.0, 1.0]


def test_go_game_stopped_by_the_move_cap_is_cut_short_and_scored_where_it_stands() -> None:
    """7x7 capped at 4 moves: four stones end the game at the cap, cut short and scored by area with its komi; two
    passes on the cap's move are the game's own end; a running game is neither."""
    game = make_game("go_7x7", komi=0.5, max_moves=4)
    step, cut_short = jax.jit(game.step), jax.jit(game.cut_short)

    def play(moves: list[str]) -> GameState:
        state = game.init(jax.random.PRNGKey(0))
        for m in moves:
            state = step(state, jnp.int32(game.parse_action(state, m)))
        return state

    running = play(["D4", "E4", "D3"])
    assert not bool(running.terminated) and not bool(cut_short(running))
    for moves, black_lead in ((["D4", "E4", "D3", "E3"], 0), (["D4", "E4", "D3", "pass"], 1)):
        capped = play(moves)
        assert bool(capped.terminated) and bool(cut_short(capped))
        black = int(capped.env._player_order[0])  # Black's player id
        assert float(game.black_margin(capped)) == black_lead - 0.5
        assert float(capped.rewards[black]) == (1.0 if black_lead - 0.5 > 0 else -1.0)
    ended = play(["D4", "E4", "pass", "pass"])
    assert bool(ended.terminated) and not bool(cut_short(ended))


# ---------------------------------------------------------------- Go: komi per game, hand-counted


@pytest.fixture(scope="module")
def go7() -> Game:
    return make_game("go_7x7")


@pytest.fixture(scope="module")
def go7_batch_step(go7: Game) -> Step:
    return jax.jit(jax.vmap(go7.step))


def _play_batch(game: Game, step: Step, states: GameState, moves: list[str]) -> GameState:
    """Plays the same moves (GTP notation) in every game of the batch; only the last one ends the games."""
    for i, text in enumerate(moves):
        assert not np.asarray(states.terminated).any(), f"ended before move {i} ({text})"
        action = game.parse_action(jax.tree.map(lambda v: v[0], states), text)
        states = step(states, jnp.full(states.komi.shape, action, jnp.int32))
        if i < len(moves) - 1:
            assert not np.asarray(states.rewards).any()
    assert np.asarray(states.terminated).all()
    return states


# Black fills column D, White column E (7x7). Area: Black A-D = 28, White E-G = 21 -> Black leads by 7.
WALL = [m for r in range(1, 8) for m in (f"D{r}", f"E{r}")] + ["pass", "pass"]
# The same, plus a lone White stone at A7 inside Black's side. Tromp-Taylor removes no dead stones:
# the 20 empty points of A-C now touch both colours and count for nobody. Black 7, White 7 + 1 + 14 = 22.
WALL_AND_INTRUDER = WALL[:-2] + ["pass", "A7", "pass", "pass"]


@pytest.mark.parametrize(
    ("moves", "lead", "komis"),
    [
        (WALL, 7, [-7.5, -0.5, 0.5, 6.5, 7.5, 9.5]),
        (WALL_AND_INTRUDER, -15, [-16.5, -15.5, -14.5, -0.5, 7.5, 9.5]),
    ],
)
def test_go_komi_per_game(go7: Game, go7_batch_step: Step, moves: list[str], lead: int, komis: list[float]) -> None:
    keys = jax.random.split(jax.random.PRNGKey(1), len(komis))  # different keys: both player orders occur
    states = jax.vmap(go7.init)(keys, jnp.float32(komis))
    np.testing.assert_array_equal(states.komi, komis)
    states = _play_batch(go7, go7_batch_step, states, moves)
    np.testing.assert_array_equal(states.komi, komis)  # the komi rides along with the game

    leads = jax.vmap(lambda x: board_lead_black(x, 7))(states.env._x)
    np.testing.assert_array_equal(leads, lead)
    order = np.asarray(states.env._player_order)
    assert len(set(order[:, 0].tolist())) == 2, "pick keys that give Black to both player ids"
    rewards = np.asarray(states.rewards)
    for i, komi in enumerate(komis):
        black, white = order[i, 0], order[i, 1]  # player id of each colour
        expected = 1.0 if lead - komi > 0 else -1.0
        assert rewards[i, black] == expected and rewards[i, white] == -expected, (komi, rewards[i])

    # A finished game stays finished, with zero rewards.
    again = go7_batch_step(states, jnp.zeros(len(komis), jnp.int32))
    assert np.asarray(again.terminated).all() and not np.asarray(again.rewards).any()


def test_go_illegal_move_loses(go7: Game, go7_batch_step: Step) -> None:
    """pgx ends the game on an illegal move with -1 for the mover; the komi rescoring must not undo it."""
    komis = [9.5, -9.5, 0.5, -0.5, 30.5, -30.5]  # the batch size of the test above: no new compile
    states = jax.vmap(go7.init)(jax.random.split(jax.random.PRNGKey(2), len(komis)), jnp.float32(komis))
    d4 = jnp.full(len(komis), go7.parse_action(jax.tree.map(lambda v: v[0], states), "D4"), jnp.int32)
    states = go7_batch_step(states, d4)  # Black D4
    movers = np.asarray(states.current_player)
    states = go7_batch_step(states, d4)  # White on the same point
    assert np.asarray(states.terminated).all()
    rewards = np.asarray(states.rewards)
    for i in range(len(komis)):
        assert rewards[i, movers[i]] == -1.0 and rewards[i, 1 - movers[i]] == 1.0


def test_go_notation(go7: Game) -> None:
    state = go7.init(jax.random.PRNGKey(0))
    texts = [go7.action_to_str(state, a) for a in range(go7.num_actions)]
    assert texts[-1] == "pass" and len(set(texts)) == 50 and "I1" not in "".join(texts)
    assert {"A1", "A7", "G1", "G7", "H1"} & set(texts) == {"A1", "A7", "G1", "G7"}
    for a, text in enumerate(texts):
        assert go7.parse_action(state, text) == a
        assert go7.parse_action(state, f" {text.lower()} ") == a
    for bad in ["", "A", "H1", "I3", "A0", "A8", "D", "44", "D4x", "resign"]:
        with pytest.raises(ValueError, match=repr(bad)):
            go7.parse_action(state, bad)
    # The top-left vertex on the board read-out is A7.
    step = jax.jit(go7.step)
    state = step(state, go7.parse_action(state, "A7"))
    board = go7.board(state)
    assert board[0, 0] == 1 and np.abs(board).sum() == 1
    with pytest.raises(ValueError, match="illegal.*'a7'"):
        go7.parse_action(state, "a7")
    text = go7.render(state)
    assert " 7 X . . . . . .  7" in text and "komi 9.5, White to move" in text


# ---------------------------------------------------------------- Go: scores against GNU Go

# --level 1 only makes GNU Go's own moves cheaper; scoring is unaffected.
GNUGO_ARGS = ["--mode", "gtp", "--chinese-rules", "--capture-all-dead", "--positional-superko", "--never-resign",
              "--seed", "1", "--boardsize", "9", "--level", "1"]


class GTP:
    """A minimal GTP client for one GNU Go process."""

    def __init__(self, komi: float) -> None:
        self.proc = subprocess.Popen([outside_program("gnugo"), *GNUGO_ARGS], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self("clear_board")
        self(f"komi {komi}")

    def __call__(self, command: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        lines: list[str] = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"GNU Go exited during {command!r}")
            if line.strip():
                lines.append(line.strip())
            elif lines:
                break
        reply = "\n".join(lines)
        assert reply.startswith("="), f"GNU Go refused {command!r}: {reply}"
        return reply[1:].strip()

    def __enter__(self) -> GTP:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _gnugo_margin(score: str) -> float:
    """Black's margin from `final_score` (`B+3.5`, `W+0.5`)."""
    side, points = score.split("+")
    return float(points) if side == "B" else -float(points)


@pytest.fixture(scope="module")
def go9() -> tuple[Game, Step]:
    outside_program("gnugo")  # skips the module's GNU Go cross-checks where it is missing (fails them in CI)
    game = make_game("go_9x9")
    return game, jax.jit(jax.vmap(game.step))


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_go_scores_match_gnugo(go9: tuple[Game, Step], seed: int) -> None:
    """A random-ish 9x9 game scored by azjax (area, Tromp-Taylor) and by GNU Go (Chinese rules).

    30-60 random legal moves, then GNU Go plays both sides until two passes (with --capture-all-dead
    it captures every dead stone first). A bare `pass pass` right after random moves would not do:
    GNU Go's `final_score` then removes the stones it judges dead, which Tromp-Taylor never does.
    The finished position is then scored for several komi values (both sides of the board lead,
    negative komi included) by both programs. GNU Go caches `final_score` per position and ignores
    a later `komi`, so each komi gets a fresh GNU Go that replays the game.
    """
    game, step = go9
    states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(seed), 4))
    rng = np.random.default_rng(seed)
    record: list[str] = []

    def play(text: str) -> None:
        nonlocal states
        one = jax.tree.map(lambda v: v[0], states)
        assert not bool(one.terminated)
        color = "b" if int(game.color_to_move(one)) == 0 else "w"
        action = game.parse_action(one, text)
        record.append(f"play {color} {text}")
        states = step(states, jnp.full(4, action, jnp.int32))

    with GTP(komi=7.5) as gnugo:
        for _ in range(int(rng.integers(30, 61))):
            one = jax.tree.map(lambda v: v[0], states)
            legal = np.flatnonzero(np.asarray(one.legal_action_mask)[:-1])
            text = game.action_to_str(one, int(rng.choice(legal)))
            gnugo(f"play {'b' if int(game.color_to_move(one)) == 0 else 'w'} {text}")
            play(text)
        passes, before_last = 0, states
        for _ in range(150):
            color = "b" if int(game.color_to_move(jax.tree.map(lambda v: v[0], states))) == 0 else "w"
            move = gnugo(f"genmove {color}")
            before_last = states
            play(move)
            passes = passes + 1 if move.lower() == "pass" else 0
            if passes == 2:
                break
        assert passes == 2 and np.asarray(states.terminated).all()
        assert gnugo("final_status_list dead") == ""

    lead = float(board_lead_black(jax.tree.map(lambda v: v[0], states).env._x, 9))
    komis = [lead - 0.5, lead + 0.5, -3.5, 7.5]
    final = step(before_last.replace(komi=jnp.float32(komis)), jnp.full(4, 81, jnp.int32))  # the last pass again
    order = np.asarray(final.env._player_order)
    for i, komi in enumerate(komis):
        with GTP(komi=komi) as gnugo:
            for command in record:
                gnugo(command)
            margin = _gnugo_margin(gnugo("final_score"))
        assert margin == lead - komi, (komi, margin, lead)
        black_reward = float(final.rewards[i, order[i, 0]])
        assert black_reward == (1.0 if margin > 0 else -1.0), (komi, black_reward)


# ---------------------------------------------------------------- chess


@pytest.fixture(scope="module")
def chess_game() -> Chess:
    game = make_game("chess")
    assert isinstance(game, Chess)
    return game


@pytest.fixture(scope="module")
def chess_step(chess_game: Chess) -> Step:
    return jax.jit(chess_game.step)


def _uci_moves(game: Game, state: GameState) -> set[str]:
    return {game.action_to_str(state, int(a)) for a in np.flatnonzero(np.asarray(state.legal_action_mask))}


def _reference_over(board: chess.Board) -> bool:
    """pgx's own end rules: mate, stalemate, insufficient material, 50 moves, threefold (no claim needed)."""
    return (board.is_checkmate() or board.is_stalemate() or board.is_insufficient_material()
            or board.halfmove_clock >= 100 or board.is_repetition(3))


def _check_same(game: Chess, state: GameState, board: chess.Board, en_passant: str = "fen") -> None:
    """azjax's FEN equals python-chess's, and so do the legal moves.

    pgx writes the en passant square after every double step (as FEN has it, python-chess's
    `en_passant="fen"`); a start position built from a FEN goes through python-chess's default
    writer, which keeps the square only when the capture is legal (`en_passant="legal"`)."""
    fen = game.fen(state)
    assert fen == board.fen(en_passant=en_passant)
    assert _uci_moves(game, state) == {m.uci() for m in chess.Board(fen).legal_moves}, fen
    assert _uci_moves(game, state) == {m.uci() for m in board.legal_moves}, fen


@pytest.mark.slow
@pytest.mark.parametrize("start", ["queen_odds", "rook_odds", "knight_odds", "standard"])
def test_chess_odds_starts(start: str) -> None:
    game = make_game("chess", start=start)
    assert isinstance(game, Chess)
    state = game.init(jax.random.PRNGKey(0))
    fen = game.fen(state)
    assert fen == ODDS_FENS[start]
    ours, full = chess.Board(fen), chess.Board(STANDARD_FEN)
    missing = {sq: p.symbol() for sq, p in full.piece_map().items() if ours.piece_at(sq) != p}
    expected = {"queen_odds": {chess.D1: "Q"}, "rook_odds": {chess.A1: "R"}, "knight_odds": {chess.B1: "N"},
                "standard": {}}[start]
    assert missing == expected
    assert set(ours.piece_map()) <= set(full.piece_map())
    assert _uci_moves(game, state) == {m.uci() for m in ours.legal_moves}
    if start == "queen_odds":  # a batch of odds games (vmap broadcasts the fixed start)
        states = jax.vmap(game.init)(jax.random.split(jax.random.PRNGKey(0), 3))
        assert states.legal_action_mask.shape == (3, game.num_actions)
        np.testing.assert_array_equal(states.legal_action_mask[2], state.legal_action_mask)
        assert game.fen(jax.tree.map(lambda v: v[1], states)) == fen


@pytest.mark.parametrize(
    "fen",
    [
        "not a fen",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1",  # short rank
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w KQkq - 0 1",  # no white king
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",  # bad side to move
        "4k3/8/8/8/8/8/8/4R1K1 w - - 0 1",  # the side not to move (Black) is in check
    ],
)
def test_chess_bad_fen(fen: str) -> None:
    with pytest.raises(ValueError, match="FEN"):
        make_game("chess", start=fen)


def test_chess_random_games_match_python_chess(chess_game: Chess, chess_step: Step) -> None:
    """Random games (biased towards castling, en passant, promotions and captures): after every ply the
    FEN and the set of legal moves in UCI agree with python-chess, `parse_action` inverts
    `action_to_str`, and the game ends exactly when pgx's rules say (checked with python-chess)."""
    seen: Counter[str] = Counter()
    for seed in (1, 6, 8):  # seeds whose games castle, capture en passant and (under)promote
        rng = np.random.default_rng(seed)
        state, board = chess_game.init(jax.random.PRNGKey(seed)), chess.Board()
        for _ in range(160):
            _check_same(chess_game, state, board)
            moves = list(board.legal_moves)
            special = [m for m in moves if board.is_castling(m) or board.is_en_passant(m) or m.promotion]
            captures = [m for m in moves if board.is_capture(m)]
            if special and rng.random() < 0.7:
                move = special[rng.integers(len(special))]
            elif captures and rng.random() < 0.3:
                move = captures[rng.integers(len(captures))]
            else:
                move = moves[rng.integers(len(moves))]
            seen["castling"] += board.is_castling(move)
            seen["capture"] += board.is_capture(move)
            seen["en passant"] += board.is_en_passant(move)
            seen["promotion"] += move.promotion is not None
            seen["underpromotion"] += move.promotion not in (None, chess.QUEEN)
            action = chess_game.parse_action(state, move.uci())
            assert chess_game.action_to_str(state, action) == move.uci()
            state = chess_step(state, action)
            board.push(move)
            assert bool(state.terminated) == _reference_over(board), board.fen()
            if board.is_checkmate():
                mover = 1 - int(state.current_player)  # the player who just moved mated
                assert float(state.rewards[mover]) == 1.0 and float(state.rewards[1 - mover]) == -1.0
            if bool(state.terminated):
                break
    assert seen["castling"] >= 2 and seen["capture"] >= 30 and seen["en passant"] >= 1, seen
    assert seen["promotion"] >= 2 and seen["underpromotion"] >= 1, seen


SPECIAL_FENS = {
    "white promotes (push and capture)": "1n5k/P7/8/8/8/8/8/6K1 w - - 0 1",
    "black promotes (push and capture)": "k7/8/8/8/8/8/p7/1N4K1 b - - 0 1",
    "white en passant": "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",
    "black en passant": "4k3/8/8/8/3Pp3/8/8/4K3 b - d3 0 1",
    "en passant pinned along the rank": "8/8/8/KPp4r/8/8/8/7k w - c6 0 2",
    "white castles both ways": "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",
    "black castles both ways": "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1",
    "castling through an attacked square": "r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1",
    "castling out of check": "r3k2r/8/8/8/8/8/4r3/R3K2R w KQkq - 0 1",
    "white in check (block or step aside)": "4k3/8/8/8/1b6/8/8/1N2K3 w - - 0 1",
    "back-rank mate in one": "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",
    "stalemate in one": "7k/8/8/5Q2/8/8/8/6K1 w - - 0 1",  # Qf7 or Qg6
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SPECIAL_FENS))
def test_chess_special_positions(chess_step: Step, name: str) -> None:
    """Legal moves from constructed positions, and the position after each of them, match python-chess.

    pgx encodes a plain pawn move to the last rank as a queen promotion and has separate actions for
    the three underpromotions, so `e7e8q`, `e7e8r`, `e7e8b`, `e7e8n` all exist (as in UCI)."""
    fen = SPECIAL_FENS[name]
    game = make_game("chess", start=fen)
    assert isinstance(game, Chess)
    state, board = game.init(jax.random.PRNGKey(0)), chess.Board(fen)
    _check_same(game, state, board, en_passant="legal")
    endings: Counter[str] = Counter()
    for move in board.legal_moves:
        after = chess_step(state, game.parse_action(state, move.uci()))
        board.push(move)
        assert game.fen(after) == board.fen(en_passant="fen"), move.uci()
        assert bool(after.terminated) == _reference_over(board), move.uci()
        mover = int(state.current_player)
        expected = 1.0 if board.is_checkmate() else 0.0
        assert float(after.rewards[mover]) == expected and float(after.rewards[1 - mover]) == -expected, move.uci()
        endings["mate"] += board.is_checkmate()
        endings["stalemate"] += board.is_stalemate()
        board.pop()
    assert (endings["mate"] > 0) == (name == "back-rank mate in one")
    assert (endings["stalemate"] > 0) == (name == "stalemate in one")
    moves = _uci_moves(game, state)
    expected_in = {"white promotes (push and capture)": {"a7a8q", "a7a8n", "a7b8r", "a7b8b"},
                   "black promotes (push and capture)": {"a2a1q", "a2b1n", "a2a1r", "a2b1b"},
                   "white en passant": {"e5d6"}, "black en passant": {"e4d3"},
                   "white castles both ways": {"e1g1", "e1c1"}, "black castles both ways": {"e8g8", "e8c8"},
                   "castling through an attacked square": {"e1c1"}}.get(name, set())
    assert expected_in <= moves
    expected_out = {"en passant pinned along the rank": {"b5c6"}, "castling through an attacked square": {"e1g1"},
                    "castling out of check": {"e1g1", "e1c1"}}.get(name, set())
    assert not expected_out & moves


def test_chess_moves_lay_out_at_their_from_square_as_the_observation_shows_it(chess_game: Chess,
                                                                              chess_step: Step) -> None:
    """`policy_layout` (the conv policy head's): every legal move's flat index lands on its from-square in the
    observation, where the mover's piece that moves is, for White and for Black to move (pgx shows the board from
    the mover's side), and the index is a one-to-one map onto the [8, 8, 73] move planes."""
    planes, index = chess_game.policy_layout()
    assert planes == 73 and index.shape == (chess_game.num_actions,)
    assert sorted(index.tolist()) == list(range(8 * 8 * 73))
    assert make_game("go_9x9").policy_layout() is None and make_game("connect_four").policy_layout() is None
    rng = np.random.default_rng(3)
    state, board = chess_game.init(jax.random.PRNGKey(0)), chess.Board()
    checked = Counter()
    for _ in range(40):
        obs = np.asarray(state.observation)
        for a in np.flatnonzero(np.asarray(state.legal_action_mask)):
            move = chess.Move.from_uci(chess_game.action_to_str(state, int(a)))
            row, column = divmod(int(index[a]) // planes, 8)
            mover_pieces = obs[row, column, :6]  # the mover's pawn, knight, bishop, rook, queen, king
            assert mover_pieces.sum() == 1, (board.fen(), move.uci())
            assert int(mover_pieces.argmax()) + 1 == board.piece_at(move.from_square).piece_type, (board.fen(), move)
            checked["white" if board.turn else "black"] += 1
        move = rng.choice(list(board.legal_moves))
        state = chess_step(state, chess_game.parse_action(state, move.uci()))
        board.push(move)
        if board.is_game_over():
            break
    assert checked["white"] > 100 and checked["black"] > 100


def test_chess_parse_errors(chess_game: Chess) -> None:
    state = chess_game.init(jax.random.PRNGKey(0))
    assert chess_game.action_to_str(state, chess_game.parse_action(state, " E2E4 ")) == "e2e4"
    with pytest.raises(ValueError, match="illegal move: 'e2e5'"):
        chess_game.parse_action(state, "e2e5")
    for bad in ["", "e2", "e9e4", "z2z4", "Nf3", "e2-e4"]:
        with pytest.raises(ValueError, match=repr(bad)):
            chess_game.parse_action(state, bad)
    assert "r n b q k b n r" in chess_game.render(state)


# ---------------------------------------------------------------- Connect Four


def test_connect_four_notation_and_render() -> None:
    game = make_game("connect_four")
    step = jax.jit(game.step)
    state = game.init(jax.random.PRNGKey(0))
    for a in range(7):
        text = game.action_to_str(state, a)
        assert text == str(a + 1)
        assert game.parse_action(state, text) == a
        assert game.parse_action(state, f" {text}\n") == a
    for bad in ["0", "8", "", "a", "-1", "3.0", "1 2", "c3"]:
        with pytest.raises(ValueError, match=repr(bad.strip())):
            game.parse_action(state, bad)

    for column in "4333333":  # column 3 ends up full (six pieces, no four in a row)
        state = step(state, game.parse_action(state, column))
    assert not bool(state.terminated)
    with pytest.raises(ValueError, match="illegal move: '3'"):
        game.parse_action(state, " 3")
    assert game.parse_action(state, "4") == 3
    rows = game.render(state).splitlines()
    assert rows == [". . X . . . .", ". . O . . . .", ". . X . . . .", ". . O . . . .", ". . X . . . .",
                    ". . O X . . .", "1 2 3 4 5 6 7"]  # the first player is X


# ---------------------------------------------------------------- chess: self-play material adjudication


def _play_uci(game: Chess, moves: list[str], start: str = STANDARD_FEN) -> list[GameState]:
    """The states after each of `moves` (UCI) from `start`, with the game's own (jitted) step."""
    state = game.start_position(fen=start)
    step = jax.jit(game.step)
    states = []
    for move in moves:
        state = step(state, game.parse_action(state, move))
        states.append(state)
    return states


def test_chess_adjudication_off_is_pgx_chess(chess_game: Chess, chess_step: Step) -> None:
    """With adjudication off the game is pgx's chess: 512 plies at most, and every step equals pgx's own."""
    assert chess_game.adjudicate_plies == 0 and chess_game.max_moves == 512
    pgx_step = jax.jit(chess_game.env.step)
    state = chess_game.init(jax.random.PRNGKey(3))
    for move in ("e2e4", "e7e5", "d1h5", "b8c6"):
        action = chess_game.parse_action(state, move)
        ours, theirs = chess_step(state, action), pgx_step(state.env, action)
        jax.tree.map(np.testing.assert_array_equal, ours.env, theirs)
        state = ours


@pytest.mark.parametrize("start, winner", [("queen_odds", "black"), ("knight_odds", "black"), ("standard", None)])
def test_chess_adjudication_judges_material_at_the_cap(start: str, winner: str | None) -> None:
    """A game still running at `adjudicate_plies` ends there: the side `adjudicate_margin` pawns ahead wins
    (a queen and a knight are 9 and 3 pawns, the margin 3), equal material is a draw; before the cap it runs on."""
    game = make_game("chess", start=start, adjudicate_plies=4, adjudicate_margin=3.0)
    assert isinstance(game, Chess) and game.max_moves == 4
    states = _play_uci(game, ["g1f3", "g8f6", "f3g1", "f6g8"], start=ODDS_FENS[start])
    assert not any(bool(s.terminated) for s in states[:3])
    assert all(float(np.abs(s.rewards).sum()) == 0 for s in states[:3])
    end = states[3]
    assert bool(end.terminated) and bool(np.asarray(end.legal_action_mask).all())
    # Four plies from a White-to-move start: White is to move again at the cap.
    white, black = int(end.current_player), 1 - int(end.current_player)
    expected = {"black": (-1.0, 1.0), None: (0.0, 0.0)}[winner]
    assert (float(end.rewards[white]), float(end.rewards[black])) == expected
    after = jax.jit(game.step)(end, jnp.int32(0))  # a finished game stays finished, with no more rewards
    assert bool(after.terminated) and float(np.abs(after.rewards).sum()) == 0


def test_chess_adjudication_margin_decides_small_edges() -> None:
    """A knight up is a win at margin 3 and a draw at margin 4."""
    for margin, expected in ((3.0, 1.0), (4.0, 0.0)):
        game = make_game("chess", start="knight_odds", adjudicate_plies=1, adjudicate_margin=margin)
        (end,) = _play_uci(game, ["e2e4"], start=ODDS_FENS["knight_odds"])
        assert bool(end.terminated)
        assert float(end.rewards[int(end.current_player)]) == expected  # Black to move, a knight up


@pytest.mark.parametrize("margin, expected", [(3.0, 1.0), (4.0, 0.75), (9.0, 1.0 / 3.0)])
def test_chess_proportional_adjudication_scores_the_lead_in_units_of_the_margin(margin: float,
                                                                                 expected: float) -> None:
    """A knight up (3 pawns) scores 3 / margin, clipped at a win, for the side ahead and its negation for the other."""
    game = make_game("chess", start="knight_odds", adjudicate_plies=1, adjudicate_margin=margin,
                     adjudicate_result="proportional")
    (end,) = _play_uci(game, ["e2e4"], start=ODDS_FENS["knight_odds"])
    ahead = int(end.current_player)  # Black to move, a knight up
    assert bool(end.terminated)
    assert float(end.rewards[ahead]) == pytest.approx(expected)
    assert float(end.rewards[1 - ahead]) == pytest.approx(-expected)


@pytest.mark.parametrize("result, lead", [("margin", 1.0), ("proportional", 0.75)])
def test_chess_adjudicate_scale_shrinks_adjudicated_results_only(result: str, lead: float) -> None:
    """At `adjudicate_scale` 0.5 a knight up at the cap scores half of what it scores at 1, and a mate at the cap
    still scores a whole win: a material lead is worth less than the mate it should become."""
    margin = 4.0 if result == "proportional" else 3.0  # a knight up: 0.75 of a win, or a whole one
    game = make_game("chess", start="knight_odds", adjudicate_plies=1, adjudicate_margin=margin,
                     adjudicate_result=result, adjudicate_scale=0.5)
    (end,) = _play_uci(game, ["e2e4"], start=ODDS_FENS["knight_odds"])
    ahead = int(end.current_player)
    assert float(end.rewards[ahead]) == pytest.approx(lead / 2)
    assert float(end.rewards[1 - ahead]) == pytest.approx(-lead / 2)
    fen = SPECIAL_FENS["back-rank mate in one"]
    (mate,) = _play_uci(make_game("chess", start=fen, adjudicate_plies=1, adjudicate_scale=0.5), ["a1a8"], start=fen)
    assert float(mate.rewards[1 - int(mate.current_player)]) == 1.0


def test_chess_adjudication_keeps_real_endings() -> None:
    """A mate is scored by the rules, not by material: White mates with a rook against three pawns, 2 pawns
    ahead, which at margin 3 material would call a draw."""
    fen = SPECIAL_FENS["back-rank mate in one"]
    game = make_game("chess", start=fen, adjudicate_plies=1, adjudicate_margin=3.0)
    (end,) = _play_uci(game, ["a1a8"], start=fen)
    mated = int(end.current_player)
    assert bool(end.terminated) and float(end.rewards[mated]) == -1.0 and float(end.rewards[1 - mated]) == 1.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="go_7x7", adjudicate_plies=100), "material adjudication applies to chess only"),
    (dict(name="chess", adjudicate_plies=512), r"adjudicate_plies must be in \[0, 512\)"),
    (dict(name="chess", adjudicate_plies=-1), r"adjudicate_plies must be in \[0, 512\)"),
    (dict(name="chess", adjudicate_plies=100, adjudicate_scale=0.0), r"adjudicate_scale must be in \(0, 1\]"),
    (dict(name="chess", adjudicate_plies=100, adjudicate_result="sign"), "adjudicate_result must be one of"),
])
def test_chess_adjudication_bad_settings_are_named(kwargs: dict[str, Any], message: str) -> None:
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=message):
        make_game(name, **kwargs)


@pytest.mark.slow
def test_chess_draw_repetition_ends_a_game_whose_position_occurred_before_as_a_draw() -> None:
    """Lc0's two-fold rule, for search trees: a knights' shuffle back to the start repeats the start position, and
    the second cycle every position of the first; each ends the game as a draw. The game's own step ends it at the
    third occurrence (threefold: the start position after the second cycle). pgx hashed the very start apart from
    the same position reached again; azjax's rules (`chess_rules`) hash every position from the tables."""
    game = make_game("chess")
    states = _play_uci(game, ["g1f3", "g8f6", "f3g1", "f6g8"] * 2)
    draw = jax.jit(game.draw_repetition)
    assert [bool(draw(s).terminated) for s in states] == [False] * 3 + [True] * 5
    assert [bool(s.terminated) for s in states] == [False] * 7 + [True]
    drawn = draw(states[5])
    assert float(jnp.abs(drawn.rewards).sum()) == 0.0 and bool(drawn.legal_action_mask.all())


@pytest.mark.slow
def test_chess_draw_repetition_keeps_a_mate_a_mate() -> None:
    fen = SPECIAL_FENS["back-rank mate in one"]
    game = make_game("chess")
    (end,) = _play_uci(game, ["a1a8"], start=fen)
    kept = game.draw_repetition(end)
    assert bool(kept.terminated)
    np.testing.assert_array_equal(kept.rewards, end.rewards)
