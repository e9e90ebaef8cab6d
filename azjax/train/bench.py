"""Self-play speed, as ratios measured in one run (shared machines are noisy; ratios travel).

For each game, at one network and one (batch, simulations) setting:

  sims_per_s             azjax's self-play: the jitted loop step with SGD off (search, move choice,
                         env step, replay write and outcome filling, restarts), many moves per call
  net_only_evals_per_s   the network's forward pass alone at the same batch: the ceiling for any
                         search that evaluates one leaf per simulation
  plain_loop_sims_per_s  a self-play loop written the way the mctx README does it: recurrent_fn +
                         `gumbel_muzero_policy`, games advanced by one jitted call per move

The three are timed in interleaved rounds and the median of each is kept. With `--breakdown` each phase
of a loop step is also timed alone (`bench_breakdown`: search = network + game steps + tree bookkeeping,
move, replay write, SGD), so the next bottleneck is named by a measurement.

With `--devices` (a process with several devices: `AZJAX_CPU_DEVICES=2 azjax bench ...` on a CPU, the
variable is read by the command line) it times the whole training step, SGD included, on the first device
alone and data-parallel on all of them (`devices` rows): on a CPU, XLA runs one device's small convolutions
on about one core, so this is what splitting the CPU buys.

With `--scaling V1,V2,...` it also times one batched PUCT search per visit count V from the same roots,
azjax's search loop (`azjax.search.core.search`) against `mctx.search`, which builds the same tree
(`search_scaling` rows): mctx's backup costs O(V) per simulation, so its search is O(V^2).

    python -m azjax.train.bench --game connect_four --game go_9x9 --out results/speed/bench_selfplay.json

Without `--out` it writes runs/bench/bench_selfplay.json (ignored by git): results/ holds committed
measurements, so only a path given there explicitly replaces one.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import mctx
import numpy as np
from jax.sharding import PartitionSpec as P

from azjax.build import load_model
from azjax.config import Config, config_flags, config_overrides, preset
from azjax.games import where_games
from azjax.search import choose_move, search_inputs
from azjax.search.core import search
from azjax.search.game_search import game_actions
from azjax.train.loop import Trainer, replay_policy


def _time(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - t


def interleaved(runs: dict[str, Callable[[], Any]], rounds: int) -> tuple[dict, dict, dict]:
    """Times each run once (its first call, compile included), then in `rounds` interleaved rounds:
    (first-call seconds, seconds per round, median seconds), each by name."""
    first = {name: _time(f) for name, f in runs.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, f in runs.items():
            times[name].append(_time(f))
    return first, times, {name: statistics.median(x) for name, x in times.items()}


def restart_finished(game: Any, key: jax.Array, states: Any) -> Any:
    """states [B] with every finished game replaced by a new one."""
    fresh = jax.vmap(game.init)(jax.random.split(key, states.terminated.shape[0]))
    done = states.terminated
    return where_games(done, fresh, states)


def _sum_of_outputs(outputs: Any) -> jax.Array:
    """The sum of every array the network gives out, whatever its heads (a tanh value [B], SAI's (alpha, beta),
    win/draw/loss logits [B, 3], KataGo's auxiliary heads): a scalar the next call's input can depend on."""
    return sum(leaf.astype(jnp.float32).sum() for leaf in jax.tree.leaves(outputs))


def plain_loop(trainer: Trainer) -> Callable[[Any, Any, jax.Array], tuple[Any, jax.Array]]:
    """The mctx README's self-play: one jitted call per move (search, then step every game), with the trainer's
    evaluator (its value head's reading of the network: tanh, SAI or win/draw/loss)."""
    game, cfg = trainer.game, trainer.config

    @jax.jit
    def move(params: Any, states: Any, key: jax.Array) -> tuple[Any, jax.Array]:
        k1, k2 = jax.random.split(key)
        root, recurrent_fn, invalid = search_inputs(game, trainer.evaluate, params, states)
        out = mctx.gumbel_muzero_policy(params, k1, root, recurrent_fn, num_simulations=cfg.num_simulations,
                                        invalid_actions=invalid,
                                        max_num_considered_actions=cfg.max_num_considered_actions)
        out = game_actions(game, states, out)  # the tree's root slots as the game's actions (`search.layout`)
        states = jax.vmap(game.step)(states, out.action)
        states = restart_finished(game, k2, states)
        return states, out.action_weights

    return move


def bench_game(game: str, config: Config, rounds: int = 3, plain: bool = True) -> dict[str, Any]:
    """The self-play step's simulations per second against the network alone and (`plain`) a plain mctx loop."""
    config = config.replace(sgd_steps_per_step=0, eval_every=0)
    trainer = Trainer(config, devices=jax.devices()[:1])
    state = trainer.init(0)
    b, sims, moves = config.num_envs, config.num_simulations, config.moves_per_step

    # (a) azjax self-play step
    def run_step() -> Any:
        nonlocal state
        state, m = trainer.step(state)
        return m

    # The step donates its input state, so (b) and (c) work on copies taken before it first runs.
    params = jax.tree.map(jnp.copy, state.params)
    games = jax.tree.map(jnp.copy, state.actors.state)

    # (b) network forward alone at batch b (as many calls as one step's simulations, in one jit).
    # Each call's input depends on the previous call's output (`0 * value`, which XLA does not fold
    # for floats), so no evaluation can be hoisted out of the loop or skipped.
    obs = games.observation.astype(jnp.float32)

    @jax.jit
    def forward_many(params: Any, obs: jax.Array) -> jax.Array:
        def body(x: jax.Array, _: None) -> tuple[jax.Array, None]:
            x = x + 0.0 * _sum_of_outputs(trainer.net.apply(params, x))
            return x, None
        return jax.lax.scan(body, obs, None, length=moves * (sims + 1))[0]

    # (c) plain loop
    move = plain_loop(trainer)
    key = jax.random.key(1)

    def run_plain() -> Any:
        nonlocal games, key
        out = None
        for _ in range(moves):
            key, sub = jax.random.split(key)
            games, out = move(params, games, sub)
        return out

    runs = {"step": run_step, "net": lambda: forward_many(params, obs)}
    if plain:
        runs["plain"] = run_plain
    compile_s, times, t = interleaved(runs, rounds)
    sims_per_s = b * sims * moves / t["step"]
    net_evals = b * moves * (sims + 1) / t["net"]
    plain_rate = b * sims * moves / t["plain"] if plain else None
    return {
        "game": game,
        "num_envs": b,
        "num_simulations": sims,
        "moves_per_call": moves,
        "search": config.search,
        "network": f"{config.num_blocks}x{config.num_channels} ResNet ({config.compute_dtype})",
        "value_head": config.value_head,
        "sims_per_s": round(sims_per_s, 1),
        "net_only_evals_per_s": round(net_evals, 1),
        "plain_loop_sims_per_s": round(plain_rate, 1) if plain else None,
        "ratio_vs_net_only": round(sims_per_s / net_evals, 3),
        "ratio_vs_plain_loop": round(sims_per_s / plain_rate, 3) if plain else None,
        "rounds": rounds,
        "seconds_per_round": {k: [round(x, 4) for x in v] for k, v in times.items()},
        "first_call_seconds": {k: round(v, 2) for k, v in compile_s.items()},
    }


def bench_devices(game: str, config: Config, rounds: int = 3) -> dict[str, Any]:
    """The training loop step (self-play and SGD) on one device and on all `jax.devices()`, interleaved."""
    devices = jax.devices()
    if len(devices) < 2:
        raise ValueError("--devices needs a process with several devices (on a CPU: AZJAX_CPU_DEVICES=2)")
    trainers = {"one_device": Trainer(config, devices=devices[:1]), "all_devices": Trainer(config, devices=devices)}
    states = {name: t.init(0) for name, t in trainers.items()}

    def stepper(name: str) -> Callable[[], Any]:
        def run() -> Any:
            states[name], m = trainers[name].step(states[name])
            return m
        return run

    compile_s, times, t = interleaved({name: stepper(name) for name in trainers}, rounds)
    return {
        "game": game,
        "devices": len(devices),
        "num_envs": config.num_envs,
        "num_simulations": config.num_simulations,
        "moves_per_step": config.moves_per_step,
        "sgd_steps_per_step": config.sgd_steps_per_step,
        "batch_size": config.batch_size,
        "network": f"{config.num_blocks}x{config.num_channels} ResNet ({config.compute_dtype})",
        "step_s_one_device": round(t["one_device"], 4),
        "step_s_all_devices": round(t["all_devices"], 4),
        "speedup_all_devices": round(t["one_device"] / t["all_devices"], 3),
        "rounds": rounds,
        "seconds_per_round": {k: [round(x, 4) for x in v] for k, v in times.items()},
        "first_call_seconds": {k: round(v, 2) for k, v in compile_s.items()},
    }


def bench_contempt(game: str, config: Config, n_scl: int, rounds: int = 3) -> list[dict[str, Any]]:
    """Self-play sims/s of plain PUCT and of PUCT with search-contempt (n_scl), interleaved."""
    rows, steps = [], []
    for k in (0, n_scl):
        cfg = config.replace(search="puct", n_scl=k, sgd_steps_per_step=0, eval_every=0)
        trainer = Trainer(cfg, devices=jax.devices()[:1])
        state = trainer.init(0)
        state, m = trainer.step(state)  # compile
        jax.block_until_ready(m)
        steps.append([trainer, state])
    times: list[list[float]] = [[], []]
    for _ in range(rounds):
        for i, pair in enumerate(steps):
            t = time.perf_counter()
            pair[1], m = pair[0].step(pair[1])
            jax.block_until_ready(m)
            times[i].append(time.perf_counter() - t)
    sims = config.num_envs * config.num_simulations * config.moves_per_step
    plain = sims / statistics.median(times[0])
    for i, k in enumerate((0, n_scl)):
        rate = sims / statistics.median(times[i])
        row = {"game": game, "search": "puct", "n_scl": k, "num_envs": config.num_envs,
               "num_simulations": config.num_simulations, "sims_per_s": round(rate, 1),
               "seconds_per_round": [round(x, 4) for x in times[i]]}
        if k:
            row["ratio_vs_plain_puct"] = round(rate / plain, 3)
        rows.append(row)
    return rows


def bench_breakdown(game: str, config: Config, rounds: int = 3) -> dict[str, Any]:
    """Seconds per loop step by phase, each phase jitted alone and run as often as one loop step runs it.

    search        `moves_per_step` searches of every game in flight (the search policy seam), of which
      network       the forward passes alone (sims + 1 per search, at the same batch),
      game_steps    the game steps the search plays (one per simulation, at the same batch),
      tree          the rest: mctx's selection, expansion and backup, the tree's bookkeeping;
    move          `moves_per_step` x (move choice from a search output + game step + restarts),
    replay_write  `moves_per_step` x (replay write + outcome filling of the games that end),
    sgd           `sgd_steps_per_step` SGD steps (sampling, augmentation, forward, backward, Adam),
    and the whole loop step for comparison (its phases fuse, so it need not equal their sum).
    """
    config = config.replace(eval_every=0)
    trainer = Trainer(config, devices=jax.devices()[:1])
    state = trainer.init(0)
    state, _ = trainer.step(state)  # compile the loop step; its input is donated
    jax.block_until_ready(state)
    params = jax.tree.map(jnp.copy, state.params)
    games = jax.tree.map(jnp.copy, state.actors.state)
    replay = jax.tree.map(jnp.copy, state.replay)
    opt_state = jax.tree.map(jnp.copy, state.opt_state)
    moves, sims = config.moves_per_step, config.num_simulations
    g = trainer.game
    keys = jax.random.split(jax.random.key(2), moves)

    def scan(body: Callable[[Any, jax.Array], Any], init: Any, xs: jax.Array) -> Any:
        return jax.lax.scan(lambda c, x: (body(c, x), None), init, xs)[0]

    @jax.jit
    def searches(params: Any, games: Any) -> Any:
        return scan(lambda acc, k: acc + trainer.search.search(params, k, games)[0].policy_target.sum(), 0.0, keys)

    searched = jax.jit(lambda p, s: trainer.search.search(p, keys[0], s)[0])(params, games)

    @jax.jit
    def network(params: Any, obs: jax.Array) -> jax.Array:  # each call's input depends on the last output
        def body(x: jax.Array, _: None) -> tuple[jax.Array, None]:
            return x + 0.0 * _sum_of_outputs(trainer.net.apply(params, x)), None
        return jax.lax.scan(body, obs, None, length=moves * (sims + 1))[0]

    def random_legal(k: jax.Array, states: Any) -> jax.Array:
        if g.search_width is None:
            return jax.random.categorical(k, jnp.where(states.legal_action_mask, 0.0, -jnp.inf)).astype(jnp.int32)
        # A game searched over slots: a uniform slot of its legal-move list, as cheap as the search's own choice
        # of a child (a categorical over chess's 4672 actions costs more than the rules' step it would time).
        moves = g.legal_actions(states)
        count = jnp.maximum((moves >= 0).sum(-1), 1)
        slot = jax.random.randint(k, count.shape, 0, 1 << 30) % count
        return jnp.maximum(jnp.take_along_axis(moves, slot[:, None], axis=1)[:, 0], 0)

    @jax.jit
    def game_steps(games: Any) -> Any:  # as many steps as the searches play, on games carried from step to step
        def body(s: Any, k: jax.Array) -> Any:
            return restart_finished(g, k, jax.vmap(g.step)(s, random_legal(k, s)))
        return scan(body, games, jax.random.split(jax.random.key(3), moves * sims))

    @jax.jit
    def move(games: Any) -> Any:
        def body(s: Any, k: jax.Array) -> Any:
            explore = jax.random.bernoulli(k, 0.5, s.terminated.shape)
            action = choose_move(trainer.spec, k, searched.out, explore)
            action = jnp.where(jnp.take_along_axis(s.legal_action_mask, action[:, None], 1)[:, 0], action,
                               random_legal(k, s))
            return restart_finished(g, k, jax.vmap(g.step)(s, action))
        return scan(body, games, keys)

    @jax.jit
    def replay_write(replay: Any, games: Any) -> Any:
        def body(r: Any, i: jax.Array) -> Any:
            ptr = (i * trainer.sizes.num_envs) % trainer.sizes.replay_size
            extras = {**trainer.value.record(games), **trainer.targets.record(searched, games, searched.out.action),
                      **trainer.search.record(searched)}
            r = trainer.write_positions(r, ptr, games, replay_policy(searched), jnp.full_like(games.current_player, i),
                                        extras)
            ended = jax.random.bernoulli(jax.random.fold_in(keys[0], i), 0.05, games.terminated.shape)
            return trainer.targets.game_ended(r, ptr, ended, jnp.full_like(games.current_player, i), games.rewards)
        return scan(body, replay, jnp.arange(moves))

    sgd_keys = jax.random.split(jax.random.key(4), max(config.sgd_steps_per_step, 1))

    def sgd_local(params: Any, opt_state: Any, replay: Any) -> Any:
        return jax.lax.scan(functools.partial(trainer.sgd_step, replay=replay), (params, opt_state), sgd_keys,
                            unroll=trainer.sgd_unroll)[0]  # as the loop step runs them

    sgd = jax.jit(jax.shard_map(sgd_local, mesh=trainer.mesh, in_specs=(P(), P(), P()), out_specs=P(),
                                check_vma=False))

    def whole_step() -> Any:
        nonlocal state
        state, m = trainer.step(state)
        return m

    obs = games.observation.astype(jnp.float32)
    phases: dict[str, Callable[[], Any]] = {
        "search": lambda: searches(params, games),
        "network": lambda: network(params, obs),
        "game_steps": lambda: game_steps(games),
        "move": lambda: move(games),
        "replay_write": lambda: replay_write(replay, games),
        "sgd": lambda: sgd(params, opt_state, replay),
        "loop_step": whole_step,
    }
    if config.sgd_steps_per_step == 0:
        del phases["sgd"]
    first, times, t = interleaved(phases, rounds)
    t["tree"] = max(t["search"] - t["network"] - t["game_steps"], 0.0)
    outside = ("move", "replay_write", "sgd")
    total = t["search"] + sum(t.get(k, 0.0) for k in outside)
    return {
        "game": game,
        "num_envs": config.num_envs,
        "num_simulations": sims,
        "moves_per_step": moves,
        "sgd_steps_per_step": config.sgd_steps_per_step,
        "batch_size": config.batch_size,
        "network": f"{config.num_blocks}x{config.num_channels} ResNet ({config.compute_dtype})",
        "seconds": {k: round(v, 4) for k, v in t.items()},
        "share_of_phases": {k: round(t[k] / total, 3) for k in ("search", "network", "game_steps", "tree", *outside)
                            if k in t},
        "rounds": rounds,
        "first_call_seconds": {k: round(v, 2) for k, v in first.items()},
    }


def tree_depths(parents: Any) -> Any:
    """int [B]: the depth of each tree (its deepest node) from mctx's parent pointers [B, N] (host side)."""
    parents = np.asarray(parents)
    depth = np.zeros(parents.shape, np.int64)
    rows = np.arange(parents.shape[0])
    for node in range(1, parents.shape[1]):  # a node's parent always has a smaller index
        depth[:, node] = np.where(parents[:, node] >= 0, depth[rows, np.maximum(parents[:, node], 0)] + 1, 0)
    return depth.max(axis=1)


def bench_search_scaling(game: str, config: Config, visits: list[int], num_envs: int, rounds: int = 3,
                         params: Any = None) -> list[dict[str, Any]]:
    """Seconds of one batched PUCT search of `num_envs` roots per visit count: azjax's loop against
    `mctx.search` (same selection, same tree), interleaved rounds, medians. `params`: a trained network's
    (default: an untrained one); the roots are new games."""
    trainer = Trainer(config.replace(num_envs=num_envs, sgd_steps_per_step=0, eval_every=0), devices=jax.devices()[:1])
    state = trainer.init(0)
    params, roots = (state.params if params is None else params), state.actors.state
    selection = functools.partial(mctx.muzero_action_selection, pb_c_init=config.pb_c_init)

    def searcher(loop: Callable[..., mctx.Tree], num_simulations: int) -> Callable[[], tuple[jax.Array, jax.Array]]:
        @jax.jit
        def run(params: Any, key: jax.Array) -> tuple[jax.Array, jax.Array]:
            root, recurrent_fn, invalid = search_inputs(trainer.game, trainer.evaluate, params, roots)
            tree = loop(params, key, root=root, recurrent_fn=recurrent_fn,
                        root_action_selection_fn=functools.partial(selection, depth=0),
                        interior_action_selection_fn=selection, num_simulations=num_simulations,
                        invalid_actions=invalid)
            return tree.summary().visit_counts, tree.parents

        return functools.partial(run, params, jax.random.key(num_simulations))

    rows = []
    for v in visits:
        runs = {"azjax": searcher(search, v), "mctx": searcher(mctx.search, v)}
        first, times, t = interleaved(runs, rounds)
        depths = tree_depths(runs["azjax"]()[1])
        rows.append({"game": game, "num_envs": num_envs, "visits": v, "search": "puct",
                     "azjax_search_s": round(t["azjax"], 4), "mctx_search_s": round(t["mctx"], 4),
                     "azjax_us_per_simulation_per_game": round(1e6 * t["azjax"] / (v * num_envs), 2),
                     "mctx_us_per_simulation_per_game": round(1e6 * t["mctx"] / (v * num_envs), 2),
                     "speedup_vs_mctx": round(t["mctx"] / t["azjax"], 2),
                     "tree_depth_mean": round(float(depths.mean()), 2), "tree_depth_max": int(depths.max()),
                     "rounds": rounds,
                     "seconds_per_round": {k: [round(x, 4) for x in xs] for k, xs in times.items()},
                     "first_call_seconds": {k: round(x, 2) for k, x in first.items()}})
        print(json.dumps({k: rows[-1][k] for k in ("game", "visits", "azjax_search_s", "mctx_search_s",
                                                   "speedup_vs_mctx", "tree_depth_max")}), flush=True)
    return rows


# The vector extensions XLA's CPU code generation uses when present: two machines that differ in them may round
# float32 sums differently, so a CPU run need not repeat itself bit for bit on another machine.
CPU_SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")


def cpu_model(cpuinfo: str | None = None) -> dict[str, Any]:
    """The CPU's model name and its `CPU_SIMD_FLAGS` from Linux's /proc/cpuinfo (or the text `cpuinfo`); where
    there is none, the platform's processor string and no flags."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    # Each CPU repeats the same fields; the last one's are kept.
    fields = {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in cpuinfo.splitlines()
                                                              if ":" in line)}
    flags = set(fields.get("flags", "").split())
    return {"cpu_model": fields.get("model name") or platform.processor() or platform.machine(),
            "cpu_simd": [f for f in CPU_SIMD_FLAGS if f in flags]}


def machine() -> dict[str, Any]:
    """What a measurement ran on: platform, CPU (model, vector extensions, cores), jax, devices, XLA flags."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        **cpu_model(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "xla_flags": os.environ.get("XLA_FLAGS", ""),  # a run with other XLA flags is another experiment
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The bench's flags (also `azjax bench`'s)."""
    p.add_argument("--game", action="append", default=None, help="repeatable; default connect_four and go_9x9")
    p.add_argument("--num_envs", type=int, default=None)
    p.add_argument("--num_simulations", type=int, default=None)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="tiny settings (a smoke test, not a measurement)")
    p.add_argument("--n_scl", type=int, default=5, help="search-contempt rows at this n_scl (0: none)")
    p.add_argument("--breakdown", action="store_true", help="time each phase of a loop step (per game)")
    p.add_argument("--preset", default="quick", help="the preset the rows are measured at (default quick)")
    p.add_argument("--devices", action="store_true",
                   help="the training step on one device and on all of them (AZJAX_CPU_DEVICES=N on a CPU)")
    p.add_argument("--scaling", default="", help="comma-separated visit counts: search_scaling rows (first game)")
    p.add_argument("--scaling_envs", type=int, default=100, help="roots per search in the scaling rows")
    p.add_argument("--scaling_model", default=None, help="a trained model (run dir or export) for the scaling rows")
    p.add_argument("--skip_plain", action="store_true",
                   help="no plain mctx loop in the headline (its backup costs O(simulations^2 x actions): minutes a "
                        "round for chess's 4672 moves at the full preset)")
    p.add_argument("--skip_loop", action="store_true",
                   help="no self-play loop rows (nor their breakdown and contempt rows): only --devices and --scaling")
    # Under the ignored runs/, not results/: a smoke test (--quick) must not rewrite a committed measurement.
    p.add_argument("--out", default="runs/bench/bench_selfplay.json",
                   help="the JSON written (default runs/bench/bench_selfplay.json; results/... only when given)")
    # Any other config field (`--value_head wdl`, `--num_blocks 6`, ...) sets the network and loop benched.
    config_flags(p, exclude=("n_scl", "num_envs", "num_simulations"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="azjax bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    games = args.game or ["connect_four", "go_9x9"]
    rows: list[dict[str, Any]] = []
    contempt_rows: list[dict[str, Any]] = []
    breakdown_rows: list[dict[str, Any]] = []
    device_rows: list[dict[str, Any]] = []
    scaling_rows: list[dict[str, Any]] = []
    out = Path(args.out)

    def write() -> None:
        """Writes what has been measured so far, so a run cut short (a lent GPU's time limit) keeps its rows."""
        result = {"results": rows, "contempt": contempt_rows, "breakdown": breakdown_rows, "devices": device_rows,
                  "search_scaling": scaling_rows, "machine": machine(),
                  "command": shlex.join(["azjax", "bench", *argv]), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
        # The headline keys at the top level, for the first game (Connect Four by default).
        headline = ("sims_per_s", "net_only_evals_per_s", "plain_loop_sims_per_s", "ratio_vs_net_only",
                    "ratio_vs_plain_loop")
        result.update({k: rows[0][k] for k in headline} if rows else {})
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")

    # --quick: a smoke test at toy sizes, everywhere (the search-scaling rows too)
    # (one SGD step a loop step: the loop unrolls its SGD steps, so the presets' 16 would compile 16 copies)
    tiny: dict[str, Any] = dict(num_envs=8, num_simulations=4, moves_per_step=2, replay_size=64, min_replay_size=8,
                                batch_size=8, sgd_steps_per_step=1, num_blocks=1, num_channels=8) if args.quick else {}
    for g in games:
        overrides: dict[str, Any] = dict(tiny)
        overrides.update(config_overrides(args))
        if args.num_envs:
            overrides["num_envs"] = args.num_envs
        if args.num_simulations:
            overrides["num_simulations"] = args.num_simulations
        config = preset(g, args.preset, **overrides)
        if args.devices:
            device_rows.append(bench_devices(g, config, rounds=1 if args.quick else args.rounds))
            print(json.dumps({k: device_rows[-1][k] for k in ("game", "devices", "step_s_one_device",
                                                               "step_s_all_devices", "speedup_all_devices")}),
                  flush=True)
            write()
        if args.skip_loop:
            continue
        row = bench_game(g, config, rounds=1 if args.quick else args.rounds, plain=not args.skip_plain)
        print(json.dumps({k: row[k] for k in ("game", "sims_per_s", "net_only_evals_per_s", "plain_loop_sims_per_s",
                                              "ratio_vs_net_only", "ratio_vs_plain_loop")}), flush=True)
        rows.append(row)
        write()
        # Contempt before the breakdown: its ratio is a goal of the run-book, the breakdown a diagnosis, and a lent
        # GPU's time limit may cut the second short.
        if args.n_scl:
            for c in bench_contempt(g, config, args.n_scl, rounds=1 if args.quick else args.rounds):
                print(json.dumps({k: c[k] for k in ("game", "n_scl", "sims_per_s")}), flush=True)
                contempt_rows.append(c)
                write()
        if args.breakdown:
            breakdown_rows.append(bench_breakdown(g, config, rounds=1 if args.quick else args.rounds))
            print(json.dumps({"game": g, **breakdown_rows[-1]["share_of_phases"]}), flush=True)
            write()
    if args.scaling:
        visits = [int(v) for v in args.scaling.split(",")]
        scaling_config, scaling_params = preset(games[0], args.preset, **tiny), None
        if args.scaling_model:
            scaling_config, scaling_params = load_model(args.scaling_model)
            if scaling_config.game != games[0]:
                raise ValueError(f"--scaling_model {args.scaling_model} plays {scaling_config.game}, not {games[0]}")
        scaling_rows = bench_search_scaling(games[0], scaling_config, visits, args.scaling_envs,
                                            rounds=1 if args.quick else args.rounds, params=scaling_params)
    write()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
