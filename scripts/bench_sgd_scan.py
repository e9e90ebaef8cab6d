"""Why the loop unrolls its SGD steps on a CPU: the network's forward pass and its gradient, N times, as
separate jitted calls, inside a rolled `lax.scan` (a while loop) and inside an unrolled one.

    python -m scripts.bench_sgd_scan [--game connect_four] [--preset quick] [--repeats 10] [--rounds 3] [--batch_size B]
                                     [--out results/speed/bench_sgd_scan.json]

XLA's CPU backend runs convolution gradients inside a while loop several times slower than outside one,
while forward passes do not suffer; the loop step therefore unrolls its `sgd_steps_per_step` steps and
pays for it in compile time. Writes the median seconds of each form (interleaved rounds), the ratios, and
the first call's seconds (compile included), for the preset's network at its SGD batch size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any


def main(argv: list[str] | None = None) -> int:
    import jax
    import jax.numpy as jnp

    from azjax.build import game_named, init_params, make_network
    from azjax.checkpoint import script_command, write_json
    from azjax.config import preset
    from azjax.train.bench import machine

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default="connect_four")
    p.add_argument("--preset", default="quick")
    p.add_argument("--repeats", type=int, default=10, help="forward passes or gradients per call")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch_size", type=int, default=None, help="positions per pass (default: the preset's SGD batch)")
    p.add_argument("--out", default="results/speed/bench_sgd_scan.json")
    args = p.parse_args(argv)

    config = preset(args.game, args.preset)
    if args.batch_size is not None:
        config = config.replace(batch_size=args.batch_size)
    game = game_named(args.game)
    net = make_network(config, game)
    params = init_params(net, game, jax.random.key(0))
    obs = jax.random.uniform(jax.random.key(1), (config.batch_size, *game.observation_shape))

    def forward(params: Any, x: jax.Array) -> jax.Array:
        return net.apply(params, x)[1].sum()

    def gradient(params: Any, x: jax.Array) -> jax.Array:
        return jax.tree.leaves(jax.grad(forward)(params, x))[0].sum()

    def forms(fn: Any) -> dict[str, Any]:
        one = jax.jit(fn)

        def separate() -> Any:
            return [one(params, obs + i) for i in range(args.repeats)]

        def in_scan(unroll: bool) -> Any:
            @jax.jit
            def run(params: Any, x: jax.Array) -> jax.Array:
                def body(c: jax.Array, _: None) -> tuple[jax.Array, None]:  # each input depends on the last output
                    return c + 0.0 * fn(params, x + c), None
                return jax.lax.scan(body, jnp.float32(0.0), None, length=args.repeats, unroll=unroll)[0]
            return lambda: run(params, obs)

        return {"separate_calls": separate, "rolled_scan": in_scan(False), "unrolled_scan": in_scan(True)}

    result: dict[str, Any] = {}
    for name, fn in (("forward", forward), ("gradient", gradient)):
        runs = forms(fn)
        first = {}
        for form, run in runs.items():
            t = time.perf_counter()
            jax.block_until_ready(run())
            first[form] = round(time.perf_counter() - t, 2)
        times: dict[str, list[float]] = {form: [] for form in runs}
        for _ in range(args.rounds):
            for form, run in runs.items():
                t = time.perf_counter()
                jax.block_until_ready(run())
                times[form].append(time.perf_counter() - t)
        median = {form: statistics.median(x) for form, x in times.items()}
        result[name] = {"seconds": {k: round(v, 4) for k, v in median.items()},
                        "rolled_over_separate": round(median["rolled_scan"] / median["separate_calls"], 2),
                        "unrolled_over_separate": round(median["unrolled_scan"] / median["separate_calls"], 2),
                        "first_call_seconds": first}
        print(name, result[name], flush=True)
    write_json(args.out, {"command": script_command(__file__, argv), "game": args.game, "preset": args.preset,
                          "network": f"{config.num_blocks}x{config.num_channels}", "batch": config.batch_size,
                          "repeats": args.repeats, "rounds": args.rounds, **result, "machine": machine(),
                          "date": time.strftime("%Y-%m-%d %H:%M:%S")})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
