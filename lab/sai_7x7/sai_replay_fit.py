"""What a SAI run's replay says about the empty board, beside what its network says (docs/methods.md section 2).

    AZJAX_CPU_DEVICES=2 python -m lab.sai_7x7.sai_replay_fit RUN_DIR [--step N] [--resamples 300]
        [--out results/sai_7x7/sai_7x7_replay_fit.json]

SAI's empty-board estimate alpha0 is trained on the empty-board positions of the self-play games in the replay,
each with the komi its game was played at and Black's result. A network that fits its data puts alpha0 where
Black's winrate in those games crosses 1/2; one whose estimate sits elsewhere is not following its own games
(too few of them, or the other positions pulling the shared weights). This script restores a run's loop
checkpoint (the replay is part of it), takes the empty-board entries that have their result, and fits Black's
winrate against komi, sigmoid(beta (alpha - k)), by maximum likelihood (lab/sai_7x7/sai_komi_curve.py's fit, with its
binomial-bootstrap 95% interval), over all of them and over the newer half of the games (by game id within each
game slot: the replay is a ring, so the older half is the next to go).

Writes --out (JSON): per komi the entries and Black's score in the replay beside the net's predicted winrate; the
fits; the net's alpha0 and beta0 for the trained and, where the run averages them, the averaged weights (the
read-out lab/sai_7x7/sai_7x7.py logs); the step and the command. The checkpoint must be restored on the device count
that wrote it: the script sets AZJAX_CPU_DEVICES from the checkpoint's manifest when it is not set.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from lab.sai_7x7 import sai_komi_curve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a SAI run directory (value_head='sai') with a loop checkpoint")
    p.add_argument("--step", type=int, default=None, help="the checkpoint's step (default: the newest)")
    p.add_argument("--resamples", type=int, default=300, help="bootstrap resamples of each fit's interval")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    p.add_argument("--out", default="results/sai_7x7/sai_7x7_replay_fit.json")
    p.add_argument("--trained_model_dir", default=None,
                   help="also write the checkpoint's trained weights (the ones self-play searched with, not the "
                        "average the run gives out) as a model here, for lab/sai_7x7/sai_komi_curve.py")
    return p.parse_args(argv)


def empty_board_entries(obs: np.ndarray, has_target: np.ndarray, empty_obs: np.ndarray) -> np.ndarray:
    """int [M]: the replay entries (obs [N, ...]) that hold the empty board (`empty_obs`) and have their result."""
    same = np.all(obs.reshape(obs.shape[0], -1) == empty_obs.reshape(1, -1), axis=1)
    return np.flatnonzero(same & has_target)


def games_since(entries: np.ndarray, entry_game_id: np.ndarray, slot_game_id: np.ndarray, local_size: int,
                local_slots: int) -> np.ndarray:
    """int [M]: how many games each entry's slot has started since the entry's game (0 = the game before the one
    in flight). The global replay is the devices' rings one after another; in each, entry i holds slot i % B."""
    slot = (entries // local_size) * local_slots + (entries % local_size) % local_slots
    return slot_game_id[slot] - entry_game_id[entries] - 1


def komi_table(komi: np.ndarray, black_won: np.ndarray) -> list[dict[str, Any]]:
    """Per distinct komi: the entries and Black's score (its result z > 0 is a win)."""
    rows = []
    for k in np.unique(komi):
        at = komi == k
        rows.append(dict(komi=float(k), entries=int(at.sum()), black_score=float(black_won[at].mean())))
    return rows


def fit(rows: list[dict[str, Any]], rng: np.random.Generator, resamples: int) -> dict[str, Any]:
    """The maximum-likelihood sigmoid of Black's score against komi over `rows` (`komi_table`), with the 95%
    bootstrap interval of its break-even komi; None values where fewer than two komis have entries."""
    rows = [r for r in rows if r["entries"] > 0]
    entries = int(sum(r["entries"] for r in rows))
    if len(rows) < 2:
        return dict(entries=entries, black_lead=None, beta=None, black_lead_low=None, black_lead_high=None)
    komis = np.array([r["komi"] for r in rows])
    scores = np.array([r["black_score"] for r in rows])
    games = np.array([float(r["entries"]) for r in rows])
    alpha, beta = sai_komi_curve.fit_sigmoid(komis, scores, games)
    low, high = sai_komi_curve.bootstrap_alpha(komis, scores, games, rng, resamples)
    return dict(entries=entries, black_lead=alpha, beta=beta, black_lead_low=low, black_lead_high=high)


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    import jax

    from azjax import checkpoint as ckpt
    from azjax.build import board_game, sai_readout
    from azjax.train.loop import Trainer

    run_dir = Path(args.run_dir)
    config = ckpt.load_config(run_dir)
    if config.value_head != "sai":
        raise SystemExit(f"{run_dir} is not a SAI run (value_head={config.value_head!r})")
    checkpointer = ckpt.StateCheckpointer(run_dir)
    step = args.step if args.step is not None else checkpointer.latest_step()
    if step is None:
        raise SystemExit(f"{run_dir} has no loop checkpoint yet")
    trainer = Trainer(config)
    template = trainer.abstract_state()
    state = checkpointer.restore(step, template)

    game = board_game(config)
    root = game.init(jax.random.key(0))
    replay = jax.device_get(state.replay)
    entries = empty_board_entries(np.asarray(replay.obs), np.asarray(replay.has_target), np.asarray(root.observation))
    komi = -np.asarray(replay.extras["kbar"])[entries]  # Black is to move on the empty board: kbar = -komi
    black_won = np.asarray(replay.value)[entries] > 0
    age = games_since(entries, np.asarray(replay.game_id), np.asarray(jax.device_get(state.actors.game_id)),
                      trainer.sizes.replay_size, trainer.sizes.num_envs)
    newer = age <= np.median(age) if entries.size else np.zeros(0, bool)

    nets = {"trained": sai_readout(config, game, jax.device_get(state.params), root)}
    if state.params_average is not None:
        nets["averaged"] = sai_readout(config, game, jax.device_get(state.params_average), root)
    table = komi_table(komi, black_won)
    for row in table:
        row.update({f"net_{name}_black_winrate": r.black_winrate(row["komi"]) for name, r in nets.items()})
    rng = np.random.default_rng(args.seed)
    trained_model = None
    if args.trained_model_dir:
        trained_model = str(ckpt.export_model(run_dir, args.trained_model_dir, jax.device_get(state.params)))
    return dict(
        run_dir=str(run_dir), step=int(step), replay_entries=int(np.asarray(replay.has_target).sum()),
        empty_board_entries=int(entries.size),
        games_since=dict(min=int(age.min()), median=float(np.median(age)), max=int(age.max())) if entries.size else {},
        fit_all=fit(table, rng, args.resamples),
        fit_newer_half=fit(komi_table(komi[newer], black_won[newer]), rng, args.resamples),
        net={name: dict(black_lead=r.black_lead, beta=r.beta) for name, r in nets.items()},
        komis=table, trained_model_dir=trained_model, config=config.to_dict(), command=command,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "AZJAX_CPU_DEVICES" not in os.environ:  # restore on the device count that wrote the checkpoint
        # azjax.checkpoint's CHECKPOINTS_DIR and MANIFEST_FILE, spelled out: importing it would start JAX's backend
        # before the CPU is split (the end-to-end test reads the count off a checkpoint this way).
        manifests = sorted(Path(args.run_dir, "checkpoints").glob("*/azjax_manifest.json"))
        if manifests:
            os.environ["AZJAX_CPU_DEVICES"] = str(json.loads(manifests[-1].read_text()).get("devices", 1))
    from azjax.cli.main import start_devices

    start_devices()  # before anything starts JAX's backend (importing azjax.checkpoint does)
    from azjax.checkpoint import CheckpointError, script_command, write_json

    try:
        summary = run(args, script_command(__file__, argv))
    except CheckpointError as e:
        raise SystemExit(f"sai_replay_fit.py: {e}") from None
    write_json(args.out, summary)

    def lead(f: dict[str, Any]) -> str:
        if f["black_lead"] is None:
            return f"no fit ({f['entries']} entries)"
        low, high = f["black_lead_low"], f["black_lead_high"]
        return f"{f['black_lead']:+.2f} [{low:+.2f}, {high:+.2f}] ({f['entries']} games)"

    nets = ", ".join(f"{name} {v['black_lead']:+.2f}" for name, v in summary["net"].items())
    print(f"step {summary['step']}: the replay's empty-board games break even at {lead(summary['fit_all'])}, "
          f"the newer half at {lead(summary['fit_newer_half'])}; the net reads {nets}; wrote {args.out}")
    return 0 if all(math.isfinite(v["black_lead"]) for v in summary["net"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
