"""The chess replay's writes and samples, compact (packed planes, sparse policy targets) against dense (float32
planes, dense policy rows, the layout before), at the loop's sizes of a preset.

    python -m scripts.bench_replay_layout [--preset quick] [--rounds 5]

Writes: one loop step's `moves_per_step` writes of `num_envs` positions (observations of random games, targets
over their legal moves) into a replay of `replay_size` entries, as one jitted scan with the replay donated.
(also undonated, a copy of the replay included, as `azjax bench --breakdown` times its replay_write phase).
Samples: one loop step's `sgd_steps_per_step` batches of `batch_size` entries read as SGD trains on them (float32
observations, dense policy rows). Prints the median seconds of each, and the replay's bytes. Nothing is written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="quick")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)

    import jax
    import jax.numpy as jnp

    from azjax import replay as rb
    from azjax.config import preset
    from azjax.games import make_game

    config = preset("chess", args.preset)
    game = make_game("chess")
    b, n, moves = config.num_envs, config.replay_size // config.num_envs * config.num_envs, config.moves_per_step
    batch, steps, actions = config.batch_size, config.sgd_steps_per_step, game.num_actions

    # The positions of random games, `moves` plies deep, and a target over each one's legal moves.
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), b))
    step = jax.jit(jax.vmap(game.step))
    observations, targets = [], []
    for k in jax.random.split(jax.random.key(1), moves):
        logits = jnp.where(states.legal_action_mask, jax.random.normal(k, states.legal_action_mask.shape), -jnp.inf)
        observations.append(states.observation)
        targets.append(jax.nn.softmax(logits))
        states = step(states, jax.random.categorical(k, logits))
    obs, policy = jnp.stack(observations), jnp.stack(targets)  # [moves, B, ...]

    layouts: dict[str, dict[str, Any]] = {
        "dense": dict(pack=lambda o: o, unpack=lambda o: o, width=None),
        "compact": dict(pack=game.pack_observation, unpack=game.unpack_observation, width=game.policy_width),
    }
    player = jnp.zeros((b,), jnp.int32)
    out: dict[str, Any] = {"preset": args.preset, "num_envs": b, "replay_size": n, "moves_per_step": moves,
                           "batch_size": batch, "sgd_steps_per_step": steps}
    for name, layout in layouts.items():
        pack, unpack = layout["pack"], layout["unpack"]
        one = jax.eval_shape(pack, jax.ShapeDtypeStruct(game.observation_shape, jnp.float32))
        replay = rb.init_replay(n, game.observation_shape, jnp.float32, actions, num_slots=b, obs_layout=one,
                                policy_width=layout["width"])

        def writes(replay: rb.Replay, obs: jax.Array, policy: jax.Array, pack: Any = pack) -> rb.Replay:
            def body(r: rb.Replay, i: jax.Array) -> tuple[rb.Replay, None]:
                ptr = (i * b) % n
                return rb.write(r, ptr, pack(obs[i]), policy[i], player, jnp.full((b,), i, jnp.int32)), None
            return jax.lax.scan(body, replay, jnp.arange(moves))[0]

        def samples(replay: rb.Replay, key: jax.Array, unpack: Any = unpack) -> jax.Array:
            def body(total: jax.Array, k: jax.Array) -> tuple[jax.Array, None]:
                idx = jax.random.randint(k, (batch,), 0, n)
                o = unpack(rb.stored_obs(replay, idx))
                return total + o.sum() + rb.policy_rows(replay, idx, actions).sum(), None
            return jax.lax.scan(body, jnp.float32(0), jax.random.split(key, steps))[0]

        write = jax.jit(writes, donate_argnums=0)
        copy_write = jax.jit(writes)  # as `azjax bench --breakdown` times its replay_write phase: a copy too
        sample = jax.jit(samples)
        replay = jax.block_until_ready(write(replay, obs, policy))  # compiles
        jax.block_until_ready(copy_write(replay, obs, policy))
        jax.block_until_ready(sample(replay, jax.random.key(0)))
        write_s, copy_write_s, sample_s = [], [], []
        for round_ in range(args.rounds):
            start = time.perf_counter()
            replay = jax.block_until_ready(write(replay, obs, policy))
            write_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            jax.block_until_ready(copy_write(replay, obs, policy))
            copy_write_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            jax.block_until_ready(sample(replay, jax.random.key(round_)))
            sample_s.append(time.perf_counter() - start)
        out[name] = {"write_s": statistics.median(write_s), "write_with_copy_s": statistics.median(copy_write_s),
                     "sample_s": statistics.median(sample_s),
                     "replay_bytes": int(sum(x.nbytes for x in jax.tree.leaves((replay.obs, replay.policy))))}
        del replay
        print(json.dumps({name: out[name]}), flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
