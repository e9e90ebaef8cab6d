"""Tournaments: pairings of players (JAX agents in jitted batches, external engines on the host), openings,
game records and the results table behind `azjax arena` (`azjax.cli.arena`, whose docstring has the details).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.engines.engine import Engine
from azjax.engines.external import EngineError, GTPClient, UCIClient
from azjax.engines.position import Position, parse_position, stack_states
from azjax.engines.records import arena_game_id, game_record, result_string
from azjax.games import STANDARD_FEN, Game, GameState
from azjax.play.agents import ActFn, Agent
from azjax.play.arena import GameRecords, MatchResult, play_from
from azjax.play.specs import ArenaAgent

# ---------------------------------------------------------------- openings


def random_openings(game: Game, num: int, plies: int, seed: int) -> list[list[str]]:
    """`num` openings of `plies` uniformly random legal moves that do not end the game."""
    rng = np.random.default_rng(seed)
    pos = Position(game)
    out = []
    for _ in range(num):
        for _attempt in range(100):
            pos.reset()
            for _ in range(plies):
                legal = np.flatnonzero(np.asarray(pos.state.legal_action_mask))
                if pos.is_over or legal.size == 0:
                    break
                pos.play_action(int(rng.choice(legal)))
            if not pos.is_over:
                break
        else:
            raise ValueError(f"could not draw a {plies}-ply opening that leaves the game running")
        out.append(list(pos.moves))
    return out


def file_openings(game: Game, path: str, num: int) -> list[str]:
    """`num` position lines from a file (cycled), each checked by setting it up."""
    lines = [ln.strip() for ln in Path(path).read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines:
        raise ValueError(f"no openings in {path}")
    pos = Position(game)
    for ln in lines:
        try:
            parse_position(pos, ln)
        except ValueError as e:
            raise ValueError(f"bad opening {ln!r} in {path}: {e}") from None
        if pos.is_over:
            raise ValueError(f"opening {ln!r} in {path} is a finished game")
    return [lines[i % len(lines)] for i in range(num)]


@dataclasses.dataclass
class Opening:
    line: str  # as given (moves, or a chess FEN [moves ...])
    fen: str | None
    moves: list[str]
    state: GameState
    komi: float


def setup_openings(game: Game, lines: list[str]) -> list[Opening]:
    pos = Position(game)
    out = []
    for ln in lines:
        parse_position(pos, ln)
        out.append(Opening(line=ln, fen=pos.start_fen, moves=list(pos.moves),
                           state=pos.state, komi=pos.komi))
    return out


# ---------------------------------------------------------------- batched JAX games


def _play_from(game: Game, act_a: ActFn, act_b: ActFn, params_a: Any, params_b: Any, key: jax.Array,
               states: GameState, max_plies: jax.Array) -> tuple[GameRecords, jax.Array]:
    """`azjax.play.arena.play_from`, and for scored games (Go) Black's area lead minus komi of the final boards
    (0 for other games). Shapes: states [N] -> score [N]."""
    records, final = play_from(game, act_a, act_b, params_a, params_b, key, states, max_plies)
    if game.scored:
        score = jax.vmap(game.black_margin)(final)
    else:
        score = jnp.zeros(states.current_player.shape[0])
    return records, score


_play_from_jit = jax.jit(_play_from, static_argnums=(0, 1, 2))


def play_games_from(game: Game, agent_a: Agent, agent_b: Agent, key: jax.Array, states: GameState,
                    max_plies: int) -> tuple[GameRecords, np.ndarray]:
    """Plays from `states` [N] (N even; rows [0, N/2) A moves first, the rest B) in one jitted batch.

    Compiled once per (game, A's act, B's act, N). Returns numpy records and, for Go,
    the final boards' area score (Black's lead minus komi)."""
    n = int(states.current_player.shape[0])
    if n < 2 or n % 2:
        raise ValueError(f"the number of games must be even and >= 2, got {n}")
    records, score = _play_from_jit(game, agent_a.act, agent_b.act, agent_a.params, agent_b.params, key, states,
                                    jnp.int32(max_plies))
    return jax.tree.map(np.asarray, records), np.asarray(score)


# ---------------------------------------------------------------- host-side games


@functools.cache
def jit_act(act: ActFn):
    """An agent's `act`, jitted once per agent (host-side games and the benchmarks share it)."""
    return jax.jit(act)


class HostPlayer:
    """One side of a host-side game."""

    def __init__(self, agent: ArenaAgent, game: Game, seed: int):
        self.agent = agent
        self.game = game
        self.key = jax.random.key(seed)
        self.seed = seed
        self.client: GTPClient | UCIClient | None = None
        self.engine: Engine | None = None
        self.sent = 0

    def start(self) -> None:
        a = self.agent
        if a.checkpoint is not None and self.engine is None:
            self.engine = Engine.from_checkpoint(a.checkpoint, visits=a.visits, n_scl=a.n_scl, search=a.search,
                                                 seed=self.seed, config_overrides=a.overrides)
        if a.kind == "gtp" and self.client is None:
            self.client = GTPClient(a.argv, name=a.name)
        elif a.kind == "uci" and self.client is None:
            self.client = UCIClient(a.argv, options=a.options, name=a.name)

    def new_game(self, opening: Opening) -> None:
        self.start()
        self.sent = 0
        self.opening = opening
        c = self.client
        if isinstance(c, GTPClient):
            if self.game.is_go:  # GTP's board size is Go's
                c.command(f"boardsize {self.game.size}")  # type: ignore[attr-defined]
            c.command("clear_board")
            if self.game.has_komi:
                c.command(f"komi {opening.komi:g}")
            if opening.fen is not None and opening.fen != STANDARD_FEN:
                raise ValueError(f"{self.agent.name}: GTP has no way to set up a chess position from a FEN")
        elif isinstance(c, UCIClient):
            c.new_game()

    def choose(self, pos: Position) -> str:
        """The move (game notation) for the side to move in `pos`; "resign" allowed for externals."""
        a = self.agent
        if self.engine is not None:  # a checkpoint: the engine's search (shares compiled code with gtp/uci)
            return self.engine.search_batch([pos.state], batch_size=1, child_pvs=False)[0].best_move
        if a.kind == "jax":
            assert a.agent is not None
            self.key, sub = jax.random.split(self.key)
            batch = jax.tree.map(lambda x: x[None], pos.state)
            action = int(jit_act(a.agent.act)(a.agent.params, sub, batch)[0])
            if not bool(np.asarray(pos.state.legal_action_mask)[action]):
                return f"illegal:{action}"
            return pos.move_str(action)
        if isinstance(self.client, GTPClient):
            history = pos.moves  # opening moves included
            for i in range(self.sent, len(history)):
                self.client.command(f"play {self.game.side_to_move(pos.states[i], i)} {history[i]}")
            self.sent = len(history) + 1
            color = self.game.side_to_move(pos.state, len(history))
            move = self.client.command(f"genmove {color}", timeout=300.0).strip()
            return self.game.move_from_gtp(move)
        assert isinstance(self.client, UCIClient)
        fen = None if pos.start_fen == STANDARD_FEN else pos.start_fen
        move, _ = self.client.bestmove(pos.moves, fen=fen, movetime_ms=a.go.get("movetime"), nodes=a.go.get("nodes"),
                                       depth=a.go.get("depth"))
        return "resign" if move in ("0000", "(none)") else move

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


@dataclasses.dataclass
class HostGame:
    moves: list[str]
    outcome_a: float  # +1 / 0 / -1 for A
    a_first: bool
    terminated: bool
    illegal: bool
    reason: str
    go_score: float | None
    plies: int  # moves played after the opening


def play_host_game(game: Game, a: HostPlayer, b: HostPlayer, opening: Opening, a_first: bool,
                   max_plies: int) -> HostGame:
    """One game on the host: A moves first after the opening if `a_first`."""
    pos = _opening_position(game, opening)
    for p in (a, b):
        p.new_game(opening)
    a_id = int(np.asarray(pos.state.current_player))
    if not a_first:
        a_id = 1 - a_id
    players = (a, b) if a_first else (b, a)
    outcome, reason, illegal = 0.0, "", False
    plies = 0
    while not pos.is_over and len(pos.moves) < max_plies:
        player = players[plies % 2]
        mover_is_a = player is a
        try:
            move = player.choose(pos)
        except EngineError as e:
            outcome, reason = (-1.0 if mover_is_a else 1.0), f"forfeit ({player.agent.name} failed: {e})"
            break
        if move.lower() == "resign":
            outcome, reason = (-1.0 if mover_is_a else 1.0), "resign"
            break
        try:
            if move.startswith("illegal:"):
                raise ValueError(f"illegal action {move[8:]}")
            pos.play(move)
        except ValueError as e:
            illegal = True
            outcome, reason = (-1.0 if mover_is_a else 1.0), f"forfeit ({player.agent.name}: {e})"
            break
        plies += 1
    terminated = True
    if not reason:
        if pos.is_over and not pos.cut_short:
            outcome = float(np.asarray(pos.state.rewards)[a_id])  # the last step's rewards decide the game
        else:
            terminated = False
            outcome, reason = _cap_outcome(game, opening, pos.moves[len(opening.moves) :], a_first)
    return HostGame(moves=list(pos.moves), outcome_a=outcome, a_first=a_first, terminated=terminated,
                    illegal=illegal, reason=reason, go_score=pos.go_score() if game.scored else None,
                    plies=plies)


# ---------------------------------------------------------------- one pairing


@dataclasses.dataclass
class GameSummary:
    moves: list[str]
    outcome_a: float
    a_first: bool
    terminated: bool
    illegal: bool
    reason: str
    go_score: float | None
    opening: Opening


def play_pairing(game: Game, a: ArenaAgent, b: ArenaAgent, openings: list[Opening], max_plies: int, seed: int,
                 players: dict[str, HostPlayer], batch_size: int | None = None) -> list[GameSummary]:
    """Every opening twice (A first, then B first)."""
    out: list[GameSummary] = []
    if not a.external and not b.external:
        assert a.agent is not None and b.agent is not None
        n = len(openings)
        per_batch = max(1, (batch_size or 2 * n) // 2)
        key = jax.random.key(seed)
        for lo in range(0, n, per_batch):
            chunk = openings[lo : lo + per_batch]
            padded = chunk + [chunk[-1]] * (per_batch - len(chunk))
            states = stack_states([o.state for o in padded + padded])
            key, sub = jax.random.split(key)
            shortest = min(len(o.moves) for o in chunk)
            records, score = play_games_from(game, a.agent, b.agent, sub, states, max(max_plies - shortest, 1))
            for row in range(2 * per_batch):
                j = row % per_batch
                if j >= len(chunk):
                    continue
                o = chunk[j]
                budget = max(max_plies - len(o.moves), 0)
                played = [int(x) for x in records.moves[row] if x >= 0]
                a_first = bool(records.a_first[row])
                truncated = len(played) > budget  # a longer budget was shared with shorter openings
                acts = played[:budget]
                moves = _action_strings(game, o, acts)
                if truncated or not bool(records.terminated[row]):
                    outcome, reason = _cap_outcome(game, o, moves, a_first)
                    terminated = False
                else:
                    outcome, reason, terminated = float(np.sign(records.outcome[row])), "", True
                if game.scored:
                    go_score = float(score[row]) if not truncated else _final_position(game, o, moves).go_score()
                else:
                    go_score = None
                out.append(GameSummary(moves=o.moves + moves, outcome_a=outcome, a_first=a_first,
                                       terminated=terminated, illegal=bool(records.illegal[row]) and not truncated,
                                       reason=reason, go_score=go_score, opening=o))
        # keep the order: all A-first games then all B-first games, per chunk -> sort A first then B first
        out.sort(key=lambda g: not g.a_first)
        return out
    pa, pb = players[a.name], players[b.name]
    for a_first in (True, False):
        for o in openings:
            g = play_host_game(game, pa, pb, o, a_first, max_plies)
            out.append(GameSummary(moves=g.moves, outcome_a=g.outcome_a, a_first=a_first, terminated=g.terminated,
                                   illegal=g.illegal, reason=g.reason, go_score=g.go_score, opening=o))
    return out


def _opening_position(game: Game, opening: Opening) -> Position:
    """The opening's position, with its komi (games that have one)."""
    pos = Position(game)
    parse_position(pos, opening.line)
    if game.has_komi:
        pos.set_komi(opening.komi)
    return pos


def _action_strings(game: Game, opening: Opening, actions: list[int]) -> list[str]:
    pos = _opening_position(game, opening)
    if not game.notation_reads_position:
        return [game.action_to_str(pos.state, a) for a in actions]
    for a in actions:
        pos.play_action(a)
    return pos.moves[len(opening.moves) :]


def _final_position(game: Game, opening: Opening, moves: list[str]) -> Position:
    pos = _opening_position(game, opening)
    for m in moves:
        pos.play(m)
    return pos


def _cap_outcome(game: Game, opening: Opening, moves: list[str], a_first: bool) -> tuple[float, str]:
    if not game.scored:
        return 0.0, "adjudicated draw at the ply cap"
    pos = _final_position(game, opening, moves)
    score = pos.go_score()
    black_is_a = (game.side_to_move(pos.states[len(opening.moves)], len(opening.moves)) == "b") == a_first
    return (1.0 if score > 0 else -1.0) * (1.0 if black_is_a else -1.0), "area score at the ply cap"


def summarize_games(name_a: str, name_b: str, games: list[GameSummary]) -> MatchResult:
    outcomes = np.array([np.sign(g.outcome_a) for g in games])
    first = np.array([g.outcome_a for g in games if g.a_first])
    return MatchResult(
        name_a=name_a, name_b=name_b, wins=int((outcomes > 0).sum()), draws=int((outcomes == 0).sum()),
        losses=int((outcomes < 0).sum()),
        first_score=float(((np.sign(first) + 1) / 2).mean()) if first.size else float("nan"),
        mean_length=float(np.mean([len(g.moves) for g in games])) if games else 0.0,
        illegal=sum(g.illegal for g in games), unfinished=sum(not g.terminated for g in games),
    )  # fmt: skip


def pairing_records(game: Game, a: ArenaAgent, b: ArenaAgent, games: list[GameSummary],
                    pairing: int) -> list[str | bytes]:
    """The record of each game of pairing `pairing` (A against B), in the game's format and in order, each named by
    its id (`azjax.engines.records.arena_game_id`); `azjax.engines.records.write_collection` writes them."""
    records = []
    for k, g in enumerate(games):
        o = g.opening
        # the player of the first move from the game start (openings count): A if A moved first after
        # an even-length opening
        a_starts = g.a_first == (len(o.moves) % 2 == 0)
        first, second = (a.name, b.name) if a_starts else (b.name, a.name)
        first_score = g.outcome_a if a_starts else -g.outcome_a
        if game.scored:
            why = "resign" if g.reason == "resign" else ("forfeit" if g.reason.startswith("forfeit") else "")
            result = result_string(game, first_score, go_black_minus_komi=None if why else g.go_score,
                                   reason=why)
        else:
            result = result_string(game, first_score)
        note = f"opening: {o.line}" if o.line else ""
        records.append(game_record(game, g.moves, first=first, second=second, result=result,
                                   komi=o.komi if game.has_komi else None, start_fen=o.fen,
                                   event="azjax arena", round_=str(k + 1),
                                   termination="; ".join(x for x in (g.reason, note) if x),
                                   game_id=arena_game_id(pairing, a.name, b.name, k)))
    return records
