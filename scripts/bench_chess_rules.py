"""azjax's chess rules (`azjax.games.chess_rules`) against pgx's own: the same kind of random games, timed in one run.

    python -m scripts.bench_chess_rules [--batches 128 1024] [--plies 32] [--rounds 3]
                                        [--out results/speed/bench_chess_rules.json]

For each batch, plays `--plies` random legal moves in every game of the batch (one jitted scan, finished games
restarting, as in self-play; each move the legal action with the largest hash of it and a random word per game,
both environments reading their `legal_action_mask`) with pgx's chess environment and with azjax's, in interleaved
rounds. pgx's step
computes and stores the 119-plane observation; azjax's state computes it on demand, so azjax's env is timed alone
and with the observation read after every move ("azjax_env_with_observation"). Writes the median seconds, moves
per second, the speed-ups (pgx's time over azjax's) and the bytes of one state of each (pgx's whole State, its
observation included).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def random_plies(step: Any, init: Any, num_games: int, plies: int, observe: bool = False) -> Any:
    """A jitted function key -> the number of finished games (plus, with `observe`, a sum over the observations),
    after `plies` random moves in each game."""
    import jax
    import jax.numpy as jnp

    def run(key: jax.Array) -> jax.Array:
        states = jax.vmap(init)(jax.random.split(key, num_games))

        def body(carry: tuple[Any, jax.Array], k: jax.Array) -> tuple[tuple[Any, jax.Array], None]:
            states, done = carry
            k_move, k_new = jax.random.split(k)
            # A random legal move: the legal action with the largest hash of (action, one random word per game).
            # `jax.random.categorical` over 4672 logits would draw 4672 numbers a game, more work than either step.
            word = jax.random.bits(k_move, (num_games, 1), jnp.uint32)
            scores = (jnp.arange(4672, dtype=jnp.uint32) * jnp.uint32(2654435761) ^ word) * jnp.uint32(2246822519)
            actions = jnp.argmax(jnp.where(states.legal_action_mask, scores | 1, 0), axis=1)
            states = jax.vmap(step)(states, actions)
            ended = states.terminated
            if observe:  # what a network reads after every move
                done = done + states.observation[..., 0, 0, :].sum().astype(jnp.int32)
            fresh = jax.vmap(init)(jax.random.split(k_new, num_games))
            states = jax.tree.map(lambda a, b: jnp.where(ended.reshape(-1, *([1] * (a.ndim - 1))), a, b),
                                  fresh, states)
            return (states, done + ended.sum()), None

        (_, done), _ = jax.lax.scan(body, (states, jnp.int32(0)), jax.random.split(key, plies))
        return done

    return jax.jit(run)


def state_bytes(state: Any) -> int:
    """Bytes of one unbatched state's arrays."""
    import jax

    return int(sum(leaf.nbytes for leaf in jax.tree.leaves(state)))


def main(argv: list[str] | None = None) -> int:
    import jax
    import pgx

    from azjax.checkpoint import script_command, write_json
    from azjax.games.chess_rules import ChessEnv
    from azjax.train.bench import interleaved, machine

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, nargs="+", default=[128, 1024])
    p.add_argument("--plies", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default="results/speed/bench_chess_rules.json")
    args = p.parse_args(argv)

    theirs, ours = pgx.make("chess"), ChessEnv()
    key = jax.random.key(0)
    sizes = {"pgx_state": state_bytes(theirs.init(key)), "azjax_state": state_bytes(ours.init(key)),
             "azjax_observation": 8 * 8 * 119 * 4}
    print(f"bytes per state: {sizes}", flush=True)
    rows = []
    for batch in args.batches:
        runs = {
            "pgx_env": random_plies(theirs.step, theirs.init, batch, args.plies),
            "azjax_env": random_plies(ours.step, ours.init, batch, args.plies),
            "azjax_env_with_observation": random_plies(ours.step, ours.init, batch, args.plies, observe=True),
        }
        calls = {name: (lambda f=f: jax.block_until_ready(f(jax.random.key(0)))) for name, f in runs.items()}
        first, _, median = interleaved(calls, args.rounds)
        moves = batch * args.plies
        row = dict(batch=batch, plies=args.plies,
                   median_seconds={k: round(v, 4) for k, v in median.items()},
                   moves_per_second={k: round(moves / v) for k, v in median.items()},
                   first_call_seconds={k: round(v, 2) for k, v in first.items()},
                   env_speedup=round(median["pgx_env"] / median["azjax_env"], 3),
                   env_with_observation_speedup=round(median["pgx_env"] / median["azjax_env_with_observation"], 3))
        print(f"chess batch {batch}: env step {row['env_speedup']}x, with the observation "
              f"{row['env_with_observation_speedup']}x faster than pgx's", flush=True)
        rows.append(row)
    write_json(args.out, dict(command=script_command(__file__, argv), machine=machine(), bytes_per_state=sizes,
                              rows=rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
