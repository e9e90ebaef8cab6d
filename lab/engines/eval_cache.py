"""How often would an evaluation cache hit? Transpositions in the engine's searches, counted in a short engine game.

    python -m lab.engines.eval_cache [--games go_7x7 chess] [--models DIR ...] [--plies 40] [--visits 64]
                                 [--capacity 65536] [--out results/engines/eval_cache.json]

An engine (azjax.engines.engine.Engine, PUCT evaluation search) plays `--plies` moves against itself from the start,
`--visits` per move, with a 1 block x 8 channel network with random weights for each of `--games`, and with each
trained model of `--models` (its search made PUCT, whose budget counts the kept visits). Random weights give peaked
priors and nearly constant values, so their PUCT trees are almost one line (each search keeps most of the last one's
visits); trained models branch as real searches do. Each engine plays twice: with tree reuse and without it
(the same engine with its kept tree dropped before each search, which searches exactly as an engine without reuse).
After each search, every node that search evaluated with the network (the nodes of its tree that it did not inherit
from the last search, less the finished games, whose value the search sets to 0 whatever the network says) is looked
up by two keys:

  * `zobrist`: the position's Zobrist hash as pgx keeps it (Go: the board's hash, which pgx writes at
    `hash_history[step_count - 1]` (0 before the first move), with the side to move and the komi; chess:
    `hash_history[0]`, which holds the side to move, castling and en passant):
    the key of a transposition table. It ignores the history planes of the network's input, so a hit on it can
    still need a new evaluation;
  * `exact`: the network's whole input (observation) and the legal-move mask: equal keys give equal evaluations, so
    these are the evaluations a cache would really save.

A node is a hit `within_search` if an earlier node of the same tree (inherited ones included) has its key, and a hit
`across_searches` if it is no such hit but a bounded cache (`--capacity` entries, least recently used out) of the
keys of every node evaluated earlier in the game has it. Writes the counts and rates per game and mode, with the
command.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import sys
import time
from typing import Any

import numpy as np


class LRUKeys:
    """The last `capacity` keys looked up or added (a host-side cache's key set, least recently used out)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.keys: collections.OrderedDict[bytes, None] = collections.OrderedDict()

    def hit(self, key: bytes) -> bool:
        """Whether `key` is held; adds it (or refreshes it) either way."""
        found = key in self.keys
        if found:
            self.keys.move_to_end(key)
        else:
            self.keys[key] = None
            if len(self.keys) > self.capacity:
                self.keys.popitem(last=False)
        return found


def node_keys(game: Any, tree: Any) -> dict[str, list[bytes]]:
    """Both keys (see the module docstring) of every node [0, N) of a batch-of-one tree on the host."""
    env = tree.embeddings.env
    n = tree.node_visits.shape[1]
    if game.is_chess:
        zobrist = np.asarray(env._x.hash_history[0, :, 0])  # [N, 2]
    else:
        steps = np.asarray(env._x.step_count[0])
        zobrist = np.asarray(env._x.hash_history[0])[np.arange(n), np.maximum(steps - 1, 0)]  # [N, 2]
        zobrist = np.where((steps > 0)[:, None], zobrist, 0)
    side = np.asarray(env.current_player[0])
    komi = np.asarray(tree.embeddings.komi[0])
    obs = np.asarray(env.observation[0]).reshape(n, -1)
    legal = np.asarray(env.legal_action_mask[0]).reshape(n, -1)
    return {
        "zobrist": [zobrist[i].tobytes() + side[i].tobytes() + komi[i].tobytes() for i in range(n)],
        "exact": [hashlib.blake2b(obs[i].tobytes() + np.packbits(legal[i]).tobytes()).digest() for i in range(n)],
    }


def play(engine: Any, plies: int, reuse: bool, capacity: int) -> dict[str, Any]:
    """One engine game of `plies` moves; the hit counts of both keys."""
    import jax

    engine.position.reset()
    engine.kept = None
    caches = {name: LRUKeys(capacity) for name in ("zobrist", "exact")}
    counts = {name: collections.Counter() for name in caches}
    searches, finished_nodes, t0 = 0, 0, time.perf_counter()
    while len(engine.position.actions) < plies and not engine.position.is_over:
        if not reuse:
            engine.kept = None
        result = engine.search()
        kept = engine.kept
        tree = jax.device_get(kept.tree)
        parents = np.asarray(tree.parents[0])
        used = np.flatnonzero((parents >= 0) | (np.arange(len(parents)) == 0))
        finished = np.asarray(tree.embeddings.env.terminated[0])
        evaluated = used[(used >= kept.inherited) & ~finished[used]]
        finished_nodes += int(((used >= kept.inherited) & finished[used]).sum())
        keys = node_keys(engine.game, tree)
        for name, per_node in keys.items():
            earlier = {per_node[i] for i in used if i < kept.inherited}
            for i in evaluated:
                key = per_node[i]
                counts[name]["evaluations"] += 1
                if key in earlier:
                    counts[name]["within_search"] += 1
                    caches[name].hit(key)
                elif caches[name].hit(key):
                    counts[name]["across_searches"] += 1
                earlier.add(key)
            for i in used[used < kept.inherited]:  # the inherited nodes were evaluated before: they are cached
                caches[name].hit(per_node[i])
        counts["zobrist"]["reused_visits"] += result.reused_visits
        engine.position.play_action(result.best_action)
        searches += 1
    out: dict[str, Any] = dict(searches=searches, plies=len(engine.position.actions),
                               seconds=round(time.perf_counter() - t0, 1), finished_nodes_left_out=finished_nodes)
    reused = counts["zobrist"].pop("reused_visits", 0)
    out["reused_visits_per_search"] = round(reused / max(searches, 1), 2)
    for name, c in counts.items():
        evaluations = c["evaluations"]
        out[name] = dict(evaluations=evaluations, within_search=c["within_search"],
                         across_searches=c["across_searches"],
                         hit_rate=round((c["within_search"] + c["across_searches"]) / max(evaluations, 1), 4))
    return out


def main(argv: list[str] | None = None) -> int:
    import jax

    from azjax.build import board_game, init_params, make_network
    from azjax.checkpoint import script_command, write_json
    from azjax.config import Config
    from azjax.engines.engine import Engine

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="*", default=["go_7x7", "chess"], help="games played with random networks")
    p.add_argument("--models", nargs="*", default=[], help="trained models (exported model or run directories)")
    p.add_argument("--plies", type=int, default=40)
    p.add_argument("--visits", type=int, default=64)
    p.add_argument("--capacity", type=int, default=65536, help="entries of the cache across searches")
    p.add_argument("--out", default="results/engines/eval_cache.json")
    args = p.parse_args(argv)

    engines: list[tuple[str, Any]] = []
    for name in args.games:
        config = Config(game=name, num_blocks=1, num_channels=8, eval_simulations=args.visits, search="puct")
        game = board_game(config)
        engines.append(("1 block x 8 channels, random weights",
                        Engine(config, init_params(make_network(config, game), game, jax.random.key(0)))))
    for path in args.models:
        engines.append((path, Engine.from_checkpoint(path, visits=args.visits, search="puct")))
    rows = []
    for network, engine in engines:
        for reuse in (True, False):
            measured = play(engine, args.plies, reuse, args.capacity)
            row = dict(game=engine.game.name, network=network, tree_reuse=reuse, visits=args.visits, **measured)
            print(f"{row['game']} ({network}) reuse={reuse}: zobrist {row['zobrist']['hit_rate']:.2%}, exact "
                  f"{row['exact']['hit_rate']:.2%} of {row['exact']['evaluations']} evaluations", flush=True)
            rows.append(row)
    write_json(args.out, dict(command=script_command(__file__, argv),
                              search="PUCT, no root noise (the engines' evaluation search)", rows=rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
