"""`azjax arena`: round robins and gauntlets among checkpoints, baselines and external engines.

    azjax arena runs/a:64 runs/b:64 mcts:200 random --games 20 --out_dir results/arena/x
    azjax arena runs/go9:8 "gtp:/usr/games/gnugo --mode gtp --level 1 --chinese-rules --capture-all-dead" \
        --games 10 --gauntlet
    azjax arena runs/chess:32 "uci:stockfish:skill=0,movetime=10" --games 10 --max_plies 200

Agents:
  * `PATH[:N][:key=value,...]`: a run directory or exported model searching N simulations
    (default `--simulations`); keys `n_scl` (0 = off) and `search` (puct / gumbel);
  * `policy:PATH`: the raw policy; `random`; `mcts:N` (rollout MCTS); `material` (chess: one ply of
    material, the move that captures the most);
  * `gtp:COMMAND ...`: a GTP program (any game whose notation it speaks; GNU Go for Go, or
    `azjax gtp --checkpoint DIR` for every game);
  * `uci:COMMAND[:key=value,...]`: a UCI chess program; keys `skill` (Stockfish's Skill Level),
    `movetime` (ms, default 100), `nodes`, `depth`; other keys are sent as `setoption`s;
  * `NAME=SPEC` names an agent explicitly (default: a short name derived from the spec).

Games: every pairing plays `--games` games (even): `--games / 2` openings, each played twice with
colours swapped ("A first" means A moves first after the opening). Openings are `--random_opening_plies
K` uniformly random legal moves (drawn once, shared by every pairing) or lines of `--openings FILE`
(one position per line, as `azjax analyze --positions`: moves in the game's notation, for chess
also a FEN, optionally followed by `moves ...`), cycled. Pairings of two JAX agents play all their
games in one jitted batch (`play_games_from`, the arena's batched loop started from the opening
positions); a pairing with an external engine plays one game at a time on the host.

Go is scored by Tromp-Taylor area rules on the final board (dead stones are not removed), so GNU Go
should run with `--chinese-rules --capture-all-dead` (it then captures dead stones before passing).
Chess games start from the standard position (odds starts: give FEN lines in `--openings`).

`--max_plies` caps a game (counted from the game start, openings included): Go is then scored by
area (Tromp-Taylor minus komi), chess and Connect Four are adjudicated draws (`unfinished`).
Games are saved under `--out_dir` (SGF for Go, PGN for chess, text for Connect Four), and
`results.json` holds every pairing (arena.MatchResult fields) and the Elo fit (azjax.arena.fit_elo,
anchored at the first agent, ratings with standard errors and 95% intervals = +-1.96 se).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax import agents
from azjax.agents import ActFn, Agent
from azjax.arena import Z95, GameRecords, MatchResult, fit_elo, round_robin_results
from azjax.engine import Engine, Position, base_game, color_to_move, load_checkpoint, parse_position
from azjax.external import EngineError, GTPClient, UCIClient, resolve_command
from azjax.games import STANDARD_FEN, Game, GameState, Go, board_lead_black
from azjax.network import make_evaluator
from azjax.records import result_string, write_record

# ---------------------------------------------------------------- agents


@dataclasses.dataclass
class ArenaAgent:
    """A player of the arena: a JAX agent (batched, jittable) or an external program (host loop)."""

    name: str
    spec: str
    kind: str  # "jax", "gtp" or "uci"
    agent: Agent | None = None
    argv: list[str] = dataclasses.field(default_factory=list)
    options: dict[str, Any] = dataclasses.field(default_factory=dict)  # uci: setoption values
    go: dict[str, int] = dataclasses.field(default_factory=dict)  # uci: movetime / nodes / depth
    checkpoint: str | None = None  # checkpoint agents: host games use an azjax.engine.Engine
    visits: int = 0
    n_scl: int | None = None
    search: str | None = None

    @property
    def external(self) -> bool:
        return self.kind != "jax"


def _split_options(text: str) -> dict[str, str]:
    out = {}
    for item in text.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"bad option {item!r}: expected key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def parse_agent(spec: str, game_name: str | None, simulations: int) -> tuple[ArenaAgent, str | None]:
    """An arena agent from its spec (see the module docstring); returns it and the game it fixes."""
    name = None
    head = spec.split(":", 1)[0]
    if "=" in head and not head.startswith(("gtp", "uci")):
        name, spec = spec.split("=", 1)
    if spec.startswith("gtp:"):
        argv = resolve_command(spec[4:])
        short = " ".join([Path(argv[0]).name] + argv[1:])
        return ArenaAgent(name=name or short, spec=spec, kind="gtp", argv=argv), None
    if spec.startswith("uci:"):
        body = spec[4:]
        opts: dict[str, str] = {}
        if ":" in body and "=" in body.rsplit(":", 1)[1]:
            body, tail = body.rsplit(":", 1)
            opts = _split_options(tail)
        argv = resolve_command(body)
        go: dict[str, int] = {}
        options: dict[str, Any] = {}
        for k, v in opts.items():
            if k in ("movetime", "nodes", "depth"):
                if not v.isdigit():
                    raise ValueError(f"uci option {k} needs a positive integer, got {v!r}")
                go[k] = int(v)
            elif k == "skill":
                options["Skill Level"] = v
            else:
                options[k] = v
        if not go:
            go["movetime"] = 100
        short = Path(argv[0]).name + "".join(f":{k}={v}" for k, v in opts.items())
        return ArenaAgent(name=name or short, spec=spec, kind="uci", argv=argv, options=options, go=go), "chess"
    # JAX agents: checkpoints with optional `:N` and `:key=value,...` suffixes
    n_scl = search = None
    base = spec
    if ":" in base and "=" in base.rsplit(":", 1)[1] and not Path(base).exists():
        base, tail = base.rsplit(":", 1)
        for k, v in _split_options(tail).items():
            if k == "n_scl":
                if not v.isdigit():
                    raise ValueError(f"n_scl needs an integer >= 0, got {v!r}")
                n_scl = int(v)
            elif k == "search":
                search = v
            else:
                raise ValueError(f"unknown checkpoint option {k!r} in {spec!r} (n_scl, search)")
    if base == "material":
        if game_name not in (None, "chess"):
            raise ValueError(f"agent 'material' plays chess, not {game_name}")
        agent = agents.material_agent(base_game("chess"))
        return ArenaAgent(name=name or "material", spec=spec, kind="jax", agent=agent), "chess"
    if base == "random" or base.startswith("mcts:"):
        if game_name is None:
            raise ValueError(f"agent {spec!r} needs --game (or a checkpoint among the agents)")
        n = base.split(":", 1)[1] if base != "random" else "1"
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"bad agent {spec!r}: mcts:N needs a positive number of simulations")
        game = base_game(game_name)  # one game object: compiled arenas are reused across pairings
        if base == "random":
            return ArenaAgent(name=name or "random", spec=spec, kind="jax", agent=agents.random_agent(game)), game_name
        agent = agents.rollout_mcts_agent(game, int(n))
        return ArenaAgent(name=name or agent.name, spec=spec, kind="jax", agent=agent), game_name
    policy = base.startswith("policy:")
    path, visits = (base[len("policy:") :] if policy else base), simulations
    if not policy and ":" in path and not Path(path).exists():
        path, n = path.rsplit(":", 1)
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"bad agent {spec!r}: PATH:N needs a positive number of simulations")
        visits = int(n)
    if not Path(path).is_dir():
        raise ValueError(f"unknown agent {spec!r}: not random, mcts:N, gtp:..., uci:... or a checkpoint directory")
    config, params = load_checkpoint(path)
    if game_name is not None and config.game != game_name:
        raise ValueError(f"{path} plays {config.game}, not {game_name}")
    if search:
        config = config.replace(eval_search=search)
    if n_scl is not None:
        config = config.replace(n_scl=n_scl or None)
    game = base_game(config.game, config.komi)
    label = Path(path).name
    if policy:
        agent = agents.policy_agent(game, make_evaluator(config, game), params=params)
        return ArenaAgent(name=name or f"{label}:policy", spec=spec, kind="jax", agent=agent), config.game
    agent = agents.network_agent(config, game, params, num_simulations=visits)
    label += f":{visits}" + (f":n_scl={n_scl}" if n_scl else "") + (f":{search}" if search else "")
    return ArenaAgent(name=name or label, spec=spec, kind="jax", agent=dataclasses.replace(agent, name=label),
                      checkpoint=path, visits=visits, n_scl=n_scl, search=search), config.game


def _checkpoint_game(spec: str) -> str | None:
    from azjax.cli import _checkpoint_game as cg

    if "=" in spec.split(":", 1)[0] and not spec.startswith(("gtp", "uci")):
        spec = spec.split("=", 1)[1]
    if spec.startswith("gtp:"):
        return None
    if spec.startswith("uci:"):
        return "chess"
    if ":" in spec and "=" in spec.rsplit(":", 1)[1] and not Path(spec).exists():
        spec = spec.rsplit(":", 1)[0]
    return cg(spec)


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
        out.append(Opening(line=ln, fen=pos.start_fen if pos.is_chess else None, moves=list(pos.moves),
                           state=pos.state, komi=pos.komi))
    return out


# ---------------------------------------------------------------- batched JAX games


def _play_from(game: Game, act_a: ActFn, act_b: ActFn, params_a: Any, params_b: Any, key: jax.Array,
               states: GameState, max_plies: jax.Array) -> tuple[GameRecords, jax.Array]:
    """`azjax.arena`'s batched loop, started from `states` [N]: rows [0, N/2) have A to move first,
    rows [N/2, N) B. Returns the records (moves from the start states) and, for Go, Black's area
    lead minus komi of the final boards (0 for other games)."""
    num_games = states.current_player.shape[0]
    half = num_games // 2
    a_first = jnp.arange(num_games) < half
    first_id = states.current_player
    a_id = jnp.where(a_first, first_id, 1 - first_id)
    moves = jnp.full((num_games, game.max_moves), -1, jnp.int32)

    def halves(s: GameState) -> tuple[GameState, GameState]:
        return jax.tree.map(lambda x: x[:half], s), jax.tree.map(lambda x: x[half:], s)

    def select(cond: jax.Array, a: Any, b: Any) -> Any:
        return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)

    def cond(carry: tuple) -> jax.Array:
        ply, _, states, *_ = carry
        return (ply < jnp.minimum(max_plies, game.max_moves)) & ~jnp.all(states.terminated)

    def body(carry: tuple) -> tuple:
        ply, key, states, moves, outcome, length, illegal = carry
        key, key_a, key_b = jax.random.split(key, 3)
        first, second = halves(states)
        a_in_first = ply % 2 == 0
        actions_a = act_a(params_a, key_a, select(a_in_first, first, second))
        actions_b = act_b(params_b, key_b, select(a_in_first, second, first))
        actions = jnp.concatenate(
            [jnp.where(a_in_first, actions_a, actions_b), jnp.where(a_in_first, actions_b, actions_a)]
        ).astype(jnp.int32)
        live = ~states.terminated
        illegal = illegal | (live & ~jnp.take_along_axis(states.legal_action_mask, actions[:, None], axis=1)[:, 0])
        states = jax.vmap(game.step)(states, actions)
        reward_a = jnp.take_along_axis(states.rewards, a_id[:, None], axis=1)[:, 0]
        outcome = outcome + jnp.where(live, reward_a, 0.0)
        moves = moves.at[:, ply].set(jnp.where(live, actions, -1))
        return ply + 1, key, states, moves, outcome, length + live.astype(jnp.int32), illegal

    carry = (jnp.int32(0), key, states, moves, jnp.zeros(num_games), jnp.zeros(num_games, jnp.int32),
             jnp.zeros(num_games, bool))
    _, _, states, moves, outcome, length, illegal = jax.lax.while_loop(cond, body, carry)
    if isinstance(game, Go):
        score = jax.vmap(lambda x: board_lead_black(x, game.size))(states.env._x) - states.komi
    else:
        score = jnp.zeros(num_games)
    records = GameRecords(outcome=outcome, length=length, moves=moves, a_first=a_first,
                          terminated=states.terminated, illegal=illegal)
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
def _jit_act(act: ActFn):
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
                                                 seed=self.seed)
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
            if isinstance(self.game, Go):
                c.command(f"boardsize {self.game.size}")
            c.command("clear_board")
            if isinstance(self.game, Go):
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
            action = int(_jit_act(a.agent.act)(a.agent.params, sub, batch)[0])
            if not bool(np.asarray(pos.state.legal_action_mask)[action]):
                return f"illegal:{action}"
            return pos.move_str(action)
        if isinstance(self.client, GTPClient):
            history = pos.moves  # opening moves included
            for i in range(self.sent, len(history)):
                self.client.command(f"play {color_to_move(pos.game, pos.states[i], i)} {history[i]}")
            self.sent = len(history) + 1
            color = color_to_move(pos.game, pos.state, len(history))
            move = self.client.command(f"genmove {color}", timeout=300.0).strip()
            return move.lower() if isinstance(self.game, Go) else move
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
    pos = Position(game)
    parse_position(pos, opening.line)
    if isinstance(game, Go):
        pos.set_komi(opening.komi)
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
        if pos.is_over:
            outcome = float(np.asarray(pos.state.rewards)[a_id])  # the last step's rewards decide the game
        else:
            terminated = False
            outcome, reason = _cap_outcome(game, opening, pos.moves[len(opening.moves) :], a_first)
    return HostGame(moves=list(pos.moves), outcome_a=outcome, a_first=a_first, terminated=terminated,
                    illegal=illegal, reason=reason, go_score=pos.go_score() if isinstance(game, Go) else None,
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
            states = jax.tree.map(lambda *xs: jnp.stack(xs), *[o.state for o in padded + padded])
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
                if isinstance(game, Go):
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


def _action_strings(game: Game, opening: Opening, actions: list[int]) -> list[str]:
    pos = Position(game)
    parse_position(pos, opening.line)
    if isinstance(game, Go):
        pos.set_komi(opening.komi)
    if game.name != "chess":  # notation independent of the position
        return [game.action_to_str(pos.state, a) for a in actions]
    for a in actions:
        pos.play_action(a)
    return pos.moves[len(opening.moves) :]


def _final_position(game: Game, opening: Opening, moves: list[str]) -> Position:
    pos = Position(game)
    parse_position(pos, opening.line)
    if isinstance(game, Go):
        pos.set_komi(opening.komi)
    for m in moves:
        pos.play(m)
    return pos


def _cap_outcome(game: Game, opening: Opening, moves: list[str], a_first: bool) -> tuple[float, str]:
    if not isinstance(game, Go):
        return 0.0, "adjudicated draw at the ply cap"
    pos = _final_position(game, opening, moves)
    score = pos.go_score()
    black_is_a = (color_to_move(game, pos.states[len(opening.moves)], len(opening.moves)) == "b") == a_first
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


def save_games(out_dir: Path, game: Game, a: ArenaAgent, b: ArenaAgent, games: list[GameSummary],
               pairing: int) -> list[Path]:
    paths = []
    for k, g in enumerate(games):
        o = g.opening
        # the player of the first move from the game start (openings count): A if A moved first after
        # an even-length opening
        a_starts = g.a_first == (len(o.moves) % 2 == 0)
        first, second = (a.name, b.name) if a_starts else (b.name, a.name)
        first_score = g.outcome_a if a_starts else -g.outcome_a
        if game.name.startswith("go_"):
            why = "resign" if g.reason == "resign" else ("forfeit" if g.reason.startswith("forfeit") else "")
            result = result_string(game.name, first_score, go_black_minus_komi=None if why else g.go_score,
                                   reason=why)
        else:
            result = result_string(game.name, first_score)
        stem = out_dir / "games" / f"{pairing:02d}_{_safe(a.name)}_vs_{_safe(b.name)}_{k:04d}"
        note = f"opening: {o.line}" if o.line else ""
        paths.append(write_record(stem, game.name, g.moves, first=first, second=second, result=result,
                                  komi=o.komi if game.name.startswith("go_") else None, start_fen=o.fen,
                                  event="azjax arena", round_=str(k + 1),
                                  termination="; ".join(x for x in (g.reason, note) if x)))
    return paths


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:40]


# ---------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.games < 2 or args.games % 2:
        raise ValueError(f"--games must be a positive even number (colours alternate), got {args.games}")
    if len(args.agents) < 2:
        raise ValueError("the arena needs at least two agents")
    game_name = args.game
    for spec in args.agents:
        g = _checkpoint_game(spec)
        if g is not None:
            if game_name is not None and g != game_name:
                raise ValueError(f"agent {spec!r} plays {g}, not {game_name}")
            game_name = g
    if game_name is None:
        raise ValueError("give --game (no agent fixes the game)")
    agents = []
    for spec in args.agents:
        agent, _ = parse_agent(spec, game_name, args.simulations)
        agents.append(agent)
    names = [a.name for a in agents]
    for i, a in enumerate(agents):  # unique names
        if names.count(a.name) > 1:
            a.name = f"{a.name}#{names[: i + 1].count(a.name)}"
    names = [a.name for a in agents]
    if any(a.kind == "uci" for a in agents) and game_name != "chess":
        raise ValueError("UCI engines play chess only")
    game = base_game(game_name, args.komi)
    num_openings = args.games // 2
    if args.openings:
        lines = file_openings(game, args.openings, num_openings)
    elif args.random_opening_plies > 0:
        pos_lines = random_openings(game, num_openings, args.random_opening_plies, args.seed)
        lines = [" ".join(m) for m in pos_lines]
    else:
        lines = [""] * num_openings
    openings = setup_openings(game, lines)
    max_plies = args.max_plies or game.max_moves
    if args.gauntlet:
        pairs = [(0, j) for j in range(1, len(agents))]
    else:
        pairs = list(itertools.combinations(range(len(agents)), 2))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    players = {a.name: HostPlayer(a, game, args.seed + i) for i, a in enumerate(agents)}
    results: list[MatchResult] = []
    t0 = time.perf_counter()
    try:
        for k, (i, j) in enumerate(pairs):
            a, b = agents[i], agents[j]
            t1 = time.perf_counter()
            games = play_pairing(game, a, b, openings, max_plies, args.seed + 1000 * k, players, args.batch_size)
            result = summarize_games(a.name, b.name, games)
            results.append(result)
            if not args.no_save:
                save_games(out_dir, game, a, b, games, k)
            print(f"{result}  ({time.perf_counter() - t1:.1f}s)", flush=True)
    except EngineError as e:  # an engine that cannot start or set up a game: a usage problem
        raise ValueError(str(e)) from e
    finally:
        for p in players.values():
            p.close()
    fit = fit_elo(names, round_robin_results(results), prior_draws=args.prior_draws)
    elo = {n: dict(rating=fit.ratings[n], stderr=fit.stderr[n], low=fit.ratings[n] - Z95 * fit.stderr[n],
                   high=fit.ratings[n] + Z95 * fit.stderr[n]) for n in names}
    summary = dict(
        game=game_name, agents={a.name: a.spec for a in agents}, games_per_pairing=args.games,
        random_opening_plies=args.random_opening_plies, openings=args.openings, max_plies=max_plies,
        pairings=[r.to_dict() for r in results], elo=elo, anchor=fit.anchor, prior_draws=args.prior_draws,
        seconds=round(time.perf_counter() - t0, 1), command="azjax " + " ".join(shlex.quote(x) for x in sys.argv[1:]),
    )  # fmt: skip
    print_table(summary)
    (out_dir / "results.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(f"wrote {out_dir / 'results.json'}" + ("" if args.no_save else f" and games under {out_dir / 'games'}"))
    return summary


def print_table(summary: dict[str, Any]) -> None:
    elo = summary["elo"]
    width = max(len(n) for n in elo) + 2
    print(f"\n{'agent':<{width}} {'Elo':>7} {'95% CI':>17}   games  score")
    points: dict[str, float] = {n: 0.0 for n in elo}
    played: dict[str, int] = {n: 0 for n in elo}
    for p in summary["pairings"]:
        pa = p["wins"] + 0.5 * p["draws"]
        points[p["name_a"]] += pa
        points[p["name_b"]] += p["games"] - pa
        played[p["name_a"]] += p["games"]
        played[p["name_b"]] += p["games"]
    for n, e in sorted(elo.items(), key=lambda kv: -kv[1]["rating"]):
        ci = f"[{e['low']:+.0f}, {e['high']:+.0f}]"
        score = points[n] / max(played[n], 1)
        print(f"{n:<{width}} {e['rating']:+7.0f} {ci:>17}   {played[n]:5d}  {score:.3f}")
    print(f"(anchor {summary['anchor']} = 0; CI = rating +- 1.96 standard errors)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = __doc__
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("agents", nargs="+", help="agent specs (see above)")
    p.add_argument("--game", default=None, help="needed when no agent is a checkpoint")
    p.add_argument("--games", type=int, default=10, help="games per pairing (even)")
    p.add_argument("--gauntlet", action="store_true", help="the first agent against each other (default: round robin)")
    p.add_argument("--simulations", type=int, default=64, help="search budget of checkpoint agents without :N")
    p.add_argument("--random_opening_plies", type=int, default=0, help="K random legal first moves per opening")
    p.add_argument("--openings", default=None, help="file of opening positions, one per line")
    p.add_argument("--max_plies", type=int, default=None, help="cap on a game's length (default: the game's own)")
    p.add_argument("--komi", type=float, default=None, help="Go: komi (default: the game's)")
    p.add_argument("--batch_size", type=int, default=None, help="JAX pairings: games per jitted batch (default all)")
    p.add_argument("--prior_draws", type=float, default=1.0,
                   help="virtual draws per pairing in the Elo fit (keeps perfect scores finite)")
    p.add_argument("--out_dir", default="results/arena", help="results.json and games/ go here")
    p.add_argument("--no_save", action="store_true", help="do not write game records")
    p.add_argument("--seed", type=int, default=0)


def main(args: argparse.Namespace) -> int:
    run(args)
    return 0
