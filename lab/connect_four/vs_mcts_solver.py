"""Plays an azjax Connect Four player against OpenSpiel's MCTS-Solver (MCTS with random rollouts that
proves wins and losses in its tree), colours alternating, and writes the score with a 95% interval.

    pip install open-spiel   # for this script only: open-spiel is no dependency of azjax
    python -m lab.connect_four.vs_mcts_solver results/models/connect_four_quick:64 --games 20 --simulations 1000
    python -m lab.connect_four.vs_mcts_solver results/models/connect_four_quick:256:search=puct --games 100 \\
        --random_opening_plies 2 --out results/connect_four/vs_mcts_solver.json

The player is an `azjax arena` spec (`azjax.play.specs.parse_agent`: `PATH[:N][:search=...,n_scl=K]`,
`policy:PATH`, `mcts:N`, `random`). The opponent is `open_spiel.python.algorithms.mcts.MCTSBot` with
`solve=True`, a `RandomRolloutEvaluator` and `--simulations` simulations per move (`--uct_c`).

Each of `--games / 2` openings (`--random_opening_plies` uniformly random moves, `arena_cli.random_openings`)
is played twice, the azjax player moving first after the opening in one game and second in the other.
All games run in lockstep on the host: at every ply the azjax player moves in all of its games with
one batched call, the bot game by game. Columns map one to one: pgx's action c and OpenSpiel's
connect_four action c are both column c + 1 from the left (`spiel_action`); the two boards are
checked against each other after every ply (legal moves, end of game, result).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

import numpy as np

MISSING_OPEN_SPIEL = ("this script needs OpenSpiel (pip install open-spiel); it is installed for the "
                      "evaluation scripts only, never as a dependency of azjax")


def import_open_spiel() -> tuple[Any, Any]:
    """(pyspiel, open_spiel.python.algorithms.mcts), or SystemExit saying how to install them."""
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts
    except ImportError as e:
        raise SystemExit(f"{MISSING_OPEN_SPIEL} ({e})") from None
    return pyspiel, mcts


def spiel_action(pgx_action: int) -> int:
    """OpenSpiel's connect_four action for a pgx connect_four action: both number columns 0-6 from
    the left (checked in tests/test_scripts_eval.py by replaying the same games in both)."""
    return int(pgx_action)


def check_same_position(pgx_state: Any, spiel_state: Any) -> None:
    """Raises RuntimeError unless one (unbatched) pgx state and one OpenSpiel state agree on whether the
    game is over and, if not, on the legal columns."""
    over = bool(np.asarray(pgx_state.terminated))
    if over != spiel_state.is_terminal():
        raise RuntimeError(f"pgx says over={over}, OpenSpiel {spiel_state.is_terminal()}:\n{spiel_state}")
    if not over:
        legal = [spiel_action(a) for a in np.flatnonzero(np.asarray(pgx_state.legal_action_mask))]
        if legal != list(spiel_state.legal_actions()):
            raise RuntimeError(f"legal columns differ: pgx {legal}, OpenSpiel {spiel_state.legal_actions()}")


@dataclasses.dataclass
class SolverGame:
    opening: list[str]
    azjax_first: bool  # the azjax player moves first after the opening
    moves: list[str]
    outcome: float  # +1 / 0 / -1 for the azjax player


def play_vs_solver(game: Any, agent: Any, make_bot: Any, openings: list[list[str]], key: Any) -> list[SolverGame]:
    """Plays every opening twice (azjax player first after it, then second) against bots from
    `make_bot(game_index)`; all games advance together, the azjax player's moves in one batch.

    Args:
      game: azjax's Connect Four (`azjax.build.game_named("connect_four")`).
      agent: an `azjax.play.agents.Agent`.
      make_bot: game index -> an object with `step(spiel_state) -> action` (e.g. an MCTSBot).
      openings: move strings ("1"-"7") per opening.
      key: PRNG key for the agent.

    Returns:
      2 * len(openings) games: game 2i plays opening i with the azjax player first, game 2i + 1 second.
    """
    import jax
    import jax.numpy as jnp

    from azjax.engines.position import Position
    from azjax.play.tournament import jit_act

    pyspiel, _ = import_open_spiel()
    spiel_game = pyspiel.load_game("connect_four")
    n = 2 * len(openings)
    positions, spiel_states, azjax_ids = [], [], []
    for i in range(n):
        pos, st = Position(game), spiel_game.new_initial_state()
        for m in openings[i // 2]:
            st.apply_action(spiel_action(pos.play(m)))
        first = int(np.asarray(pos.state.current_player))
        azjax_ids.append(first if i % 2 == 0 else 1 - first)  # pgx player id of the azjax player
        positions.append(pos)
        spiel_states.append(st)
    states = jax.tree.map(lambda *xs: jnp.stack(xs), *[p.state for p in positions])
    azjax_ids = np.array(azjax_ids)
    moves = [list(opening) for opening in openings for _ in range(2)]
    bots = [make_bot(i) for i in range(n)]
    step = jax.jit(jax.vmap(game.step))
    act = jit_act(agent.act)
    outcome = np.zeros(n)
    while not np.asarray(states.terminated).all():
        live = ~np.asarray(states.terminated)
        azjax_moves = live & (np.asarray(states.current_player) == azjax_ids)
        actions = np.zeros(n, np.int32)  # finished games get a dummy move, which pgx ignores
        if azjax_moves.any():
            key, sub = jax.random.split(key)
            actions = np.where(azjax_moves, np.asarray(act(agent.params, sub, states)), actions).astype(np.int32)
        for i in np.flatnonzero(live & ~azjax_moves):
            actions[i] = bots[i].step(spiel_states[i])  # OpenSpiel's action = pgx's (spiel_action)
        for i in np.flatnonzero(live):
            if not bool(np.asarray(states.legal_action_mask)[i, actions[i]]):
                raise RuntimeError(f"game {i}: illegal column {actions[i] + 1} by the "
                                   f"{'azjax player' if azjax_moves[i] else 'bot'}")
            spiel_states[i].apply_action(spiel_action(actions[i]))
            moves[i].append(str(actions[i] + 1))
        states = step(states, jnp.asarray(actions))
        outcome += np.where(live, np.asarray(states.rewards)[np.arange(n), azjax_ids], 0.0)
        for i in np.flatnonzero(live):
            check_same_position(jax.tree.map(lambda x, i=i: x[i], states), spiel_states[i])
    games = []
    for i in range(n):
        spiel_player = (len(openings[i // 2]) + (i % 2)) % 2  # OpenSpiel's player 0 moves first
        spiel_outcome = float(spiel_states[i].returns()[spiel_player])
        if spiel_outcome != outcome[i]:
            raise RuntimeError(f"game {i}: pgx result {outcome[i]} for the azjax player, OpenSpiel {spiel_outcome}")
        games.append(SolverGame(opening=list(openings[i // 2]), azjax_first=i % 2 == 0,
                                moves=moves[i], outcome=float(outcome[i])))
    return games


def summarize_games(games: list[SolverGame], name_a: str, name_b: str) -> Any:
    """`azjax.play.arena.MatchResult` of the azjax player (A) from the games."""
    from azjax.play.arena import MatchResult

    outcome = np.array([g.outcome for g in games])
    first = np.array([g.outcome for g in games if g.azjax_first])
    return MatchResult(name_a=name_a, name_b=name_b, wins=int((outcome > 0).sum()), draws=int((outcome == 0).sum()),
                       losses=int((outcome < 0).sum()),
                       first_score=float(((first + 1) / 2).mean()) if first.size else float("nan"),
                       mean_length=float(np.mean([len(g.moves) for g in games])))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("agent", help="the azjax player (PATH[:N][:search=...], policy:PATH, mcts:N, random)")
    p.add_argument("--agent_simulations", type=int, default=64, help="simulations of a PATH agent without :N")
    p.add_argument("--simulations", type=int, default=1000, help="MCTS-Solver simulations per move")
    p.add_argument("--uct_c", type=float, default=2.0, help="MCTS-Solver UCT constant (OpenSpiel's examples: 2)")
    p.add_argument("--rollouts", type=int, default=1, help="random rollouts per MCTS-Solver leaf")
    p.add_argument("--games", type=int, default=20, help="games (even: each opening with both colours)")
    p.add_argument("--random_opening_plies", type=int, default=0, help="uniformly random moves before play")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="results/connect_four/vs_mcts_solver.json")
    return p


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    import jax

    from azjax.build import game_named as base_game
    from azjax.compile_cache import enable_compilation_cache
    from azjax.play.specs import require_jax_agent
    from azjax.play.tournament import random_openings

    pyspiel, mcts = import_open_spiel()
    if args.games < 2 or args.games % 2:
        raise SystemExit(f"--games must be even and >= 2, got {args.games}")
    if not jax.config.jax_compilation_cache_dir:  # keep a cache the caller (e.g. the tests) set up
        enable_compilation_cache()
    player = require_jax_agent(args.agent, "connect_four", args.agent_simulations)
    game = base_game("connect_four")
    openings = random_openings(game, args.games // 2, args.random_opening_plies, args.seed)
    spiel_game = pyspiel.load_game("connect_four")

    def make_bot(i: int) -> Any:
        rng = np.random.RandomState(args.seed * 100_003 + i)
        evaluator = mcts.RandomRolloutEvaluator(n_rollouts=args.rollouts, random_state=rng)
        return mcts.MCTSBot(spiel_game, args.uct_c, args.simulations, evaluator, solve=True, random_state=rng)

    bot_name = f"mcts-solver{args.simulations}"
    t0 = time.time()
    games = play_vs_solver(game, player.agent, make_bot, openings, jax.random.key(args.seed))
    result = summarize_games(games, player.name, bot_name)
    print(result, flush=True)
    return dict(
        command=command,
        args=vars(args),
        agent=player.name,
        opponent=dict(name=bot_name, kind="open_spiel.python.algorithms.mcts.MCTSBot", solve=True,
                      evaluator=f"RandomRolloutEvaluator(n_rollouts={args.rollouts})", max_simulations=args.simulations,
                      uct_c=args.uct_c),
        result=result.to_dict(),
        notes=("result from the azjax player's view; score = (w + d/2) / games with its 95% Wilson interval; each "
               "opening is played twice, the azjax player moving first after it in one game (azjax_first) and "
               "second in the other; moves are columns 1-7 from the left, openings included"),
        games=[dataclasses.asdict(g) for g in games],
        seconds=round(time.time() - t0, 1),
    )


def main(argv: list[str] | None = None) -> int:
    from azjax.checkpoint import script_command, write_json

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    summary = run(args, script_command(__file__, argv))
    write_json(args.out, summary)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
