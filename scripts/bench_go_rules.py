"""azjax's Go rules (`azjax.games.go_rules`) against pgx's own: the same random games, timed in one run.

    python -m scripts.bench_go_rules [--sizes 7 9] [--batches 128 1024] [--plies 64] [--rounds 5]
                                     [--out results/speed/bench_go_rules.json]

For each board size and batch, plays `--plies` random moves in every game of the batch (one jitted scan,
finished games restarting, as in self-play) with pgx's Go environment and with azjax's (which returns the
same states bit for bit), in interleaved rounds, and with the whole `Game.step` azjax searches with
(scoring with each game's komi) on either environment. Writes the median seconds, the moves per second and
the speed-ups (pgx's time over azjax's).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def random_plies(step: Any, init: Any, num_games: int, plies: int) -> Any:
    """A jitted function key -> the number of finished games, after `plies` random moves in each game."""
    import jax
    import jax.numpy as jnp

    def run(key: jax.Array) -> jax.Array:
        states = jax.vmap(init)(jax.random.split(key, num_games))

        def body(carry: tuple[Any, jax.Array], k: jax.Array) -> tuple[tuple[Any, jax.Array], None]:
            states, done = carry
            k_move, k_new = jax.random.split(k)
            legal = states.legal_action_mask
            actions = jax.random.categorical(k_move, jnp.where(legal, 0.0, -jnp.inf))
            states = jax.vmap(step)(states, actions)
            ended = states.terminated
            fresh = jax.vmap(init)(jax.random.split(k_new, num_games))
            states = jax.tree.map(lambda a, b: jnp.where(ended.reshape(-1, *([1] * (a.ndim - 1))), a, b),
                                  fresh, states)
            return (states, done + ended.sum()), None

        (_, done), _ = jax.lax.scan(body, (states, jnp.int32(0)), jax.random.split(key, plies))
        return done

    return jax.jit(run)


def main(argv: list[str] | None = None) -> int:
    import dataclasses

    import jax
    import pgx.go

    from azjax.checkpoint import script_command, write_json
    from azjax.games import make_game
    from azjax.games.go_rules import go_env
    from azjax.train.bench import interleaved, machine

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[7, 9])
    p.add_argument("--batches", type=int, nargs="+", default=[128, 1024])
    p.add_argument("--plies", type=int, default=64)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default="results/speed/bench_go_rules.json")
    args = p.parse_args(argv)

    rows = []
    for size in args.sizes:
        ours = make_game(f"go_{size}x{size}")
        theirs = dataclasses.replace(ours, env=pgx.go.Go(size=size, komi=0.0))
        assert type(ours.env._game).__name__ == "GoRules" and type(theirs.env._game).__name__ == "Game"
        for batch in args.batches:
            runs = {
                "pgx_env": random_plies(theirs.env.step, theirs.env.init, batch, args.plies),
                "azjax_env": random_plies(go_env(size).step, go_env(size).init, batch, args.plies),
                "game_step_on_pgx": random_plies(theirs.step, theirs.init, batch, args.plies),
                "game_step_on_azjax": random_plies(ours.step, ours.init, batch, args.plies),
            }
            calls = {name: (lambda f=f: jax.block_until_ready(f(jax.random.key(0)))) for name, f in runs.items()}
            first, _, median = interleaved(calls, args.rounds)
            moves = batch * args.plies
            row = dict(size=size, batch=batch, plies=args.plies,
                       median_seconds={k: round(v, 4) for k, v in median.items()},
                       moves_per_second={k: round(moves / v) for k, v in median.items()},
                       first_call_seconds={k: round(v, 2) for k, v in first.items()},
                       env_speedup=round(median["pgx_env"] / median["azjax_env"], 3),
                       game_step_speedup=round(median["game_step_on_pgx"] / median["game_step_on_azjax"], 3))
            print(f"go {size}x{size} batch {batch}: env step {row['env_speedup']}x, "
                  f"Game.step {row['game_step_speedup']}x faster than on pgx's rules", flush=True)
            rows.append(row)
    write_json(args.out, dict(command=script_command(__file__, argv), machine=machine(), rows=rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
