"""`azjax analyze`: search positions and show (or write) the per-move statistics.

    azjax analyze --checkpoint DIR --moves "D4 E5" [--visits N] [--top 20] [--json]
    azjax analyze --checkpoint DIR --fen "FEN" [--moves "e2e4 e7e5"]
    azjax analyze --checkpoint DIR --positions FILE --out FILE.jsonl [--batch_size 64]
    azjax analyze --game go_7x7 --checkpoint SAI_MODEL --moves "D4 E5" [--komi 7.5]

One position: prints the board, lc0's verbose move statistics (see azjax.engines.engine), the value of
the player to move (the chosen move's Q) and, for chess, centipawns. A SAI checkpoint
(value_head="sai", Go) also prints its score read-out: the estimated score lead, beta, the winrate at
the game's komi and a table of Black's winrate against komi (with --json: a "sai" object).

Many positions (`--positions`): one position per line (moves in the game's notation from the
start, spaces or commas between them; for chess also a FEN, `FEN moves ...` or `startpos moves
...`; empty lines and `#` comments skipped). All positions are searched in batches of
`--batch_size` with one jitted search (the last batch padded) and written one JSON object per line:

    {"position": LINE, "move": BEST, "value": Q, "cp": C (chess), "root_value": V, "net_value": V0,
     "visits": {MOVE: N, ...} (moves with N > 0, most first), "prior": {MOVE: P, ...} (same moves),
     "pv": [...]} (and "moves_left": M, the plies the network's moves-left head predicts, where it has one)

A line that cannot be set up gives {"position": LINE, "error": MESSAGE}; a finished game gives
"move": null.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from azjax.build import sai_readout
from azjax.checkpoint import refuse_model_dir
from azjax.cli.args import finite_float, nonnegative_int, positive_float, positive_int
from azjax.engines.engine import Engine
from azjax.engines.lc0 import SearchResult, format_table
from azjax.engines.position import Position, parse_position
from azjax.methods.sai import readout_lines


def result_json(line: str, r: SearchResult) -> dict[str, Any]:
    visited = [s for s in r.stats if s.n > 0]
    d: dict[str, Any] = dict(position=line, move=r.best_move or None, value=r.value, root_value=r.root_value,
                             net_value=r.net_value, visits={s.move: s.n for s in visited},
                             prior={s.move: s.p for s in visited}, pv=r.pv)
    if r.cp is not None:
        d["cp"] = r.cp
    if r.net_moves_left is not None:
        d["moves_left"] = r.net_moves_left
    return d


def analyze_file(engine: Engine, positions: str, out: str, visits: int | None = None,
                 batch_size: int = 64) -> dict[str, int]:
    """Searches every position of `positions`; writes JSON lines to `out`. Returns counts."""
    lines = [ln.strip() for ln in Path(positions).read_text().splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    pos = Position(engine.game, engine.position.default_start_fen)
    if engine.game.has_komi:
        pos.set_komi(engine.position.komi)
    states, entries = [], []  # entries: (line, index into states or an error message)
    for ln in lines:
        try:
            parse_position(pos, ln)
        except ValueError as e:
            entries.append((ln, str(e)))
            continue
        entries.append((ln, len(states)))
        states.append(pos.state)
    results = engine.search_batch(states, visits=visits, batch_size=max(1, min(batch_size, len(states) or 1)))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    errors = 0
    with open(out, "w") as f:
        for ln, ref in entries:
            if isinstance(ref, str):
                errors += 1
                f.write(json.dumps(dict(position=ln, error=ref)) + "\n")
            else:
                f.write(json.dumps(result_json(ln, results[ref])) + "\n")
    return dict(positions=len(entries), searched=len(states), errors=errors)


def main(args: argparse.Namespace) -> int:
    if args.out:
        refuse_model_dir(args.out, f"--out {args.out}")
    if args.positions and not args.out:  # before the engine is built (and its search compiled)
        raise ValueError("--positions needs --out FILE.jsonl")
    overrides = {field: value for field, value in (("eval_max_num_considered_actions", args.considered),
                                                   ("eval_gumbel_c_scale", args.c_scale),
                                                   ("eval_certainty_propagation", args.certainty)) if value is not None}
    engine = Engine.from_checkpoint(args.checkpoint, visits=args.visits, n_scl=args.n_scl, search=args.search,
                                    config_overrides=overrides)
    if args.positions:
        if not args.out:
            raise ValueError("--positions needs --out FILE.jsonl")
        t0 = time.perf_counter()
        counts = analyze_file(engine, args.positions, args.out, batch_size=args.batch_size)
        print(f"searched {counts['searched']} of {counts['positions']} positions ({counts['errors']} errors) "
              f"with {engine.visits} visits in {time.perf_counter() - t0:.1f}s; wrote {args.out}")
        return 0
    if args.game and args.game != engine.config.game:
        raise ValueError(f"{args.checkpoint} plays {engine.config.game}, not {args.game}")
    if args.fen and not engine.game.has_fen:
        raise ValueError(f"--fen applies to chess only; this checkpoint plays {engine.game.name}")
    pos = engine.position
    pos.set_position((args.moves or "").replace(",", " ").split(), fen=args.fen, komi=args.komi)
    result = engine.search()
    readout = None
    if engine.config.value_head == "sai":
        readout = sai_readout(engine.config, engine.game, engine.params, pos.state)
    if args.json:
        extra = {"stats": [s.to_dict() for s in result.stats]} | ({"sai": readout.to_dict()} if readout else {})
        print(json.dumps(result_json(" ".join(pos.moves), result) | extra))
        return 0
    print(pos.render())
    if readout is not None:
        print("\n" + "\n".join(readout_lines(readout)))
    if pos.is_over:
        print("the game is over")
        return 0
    print(f"\n{pos.to_move()} to move; {result.visits} visits ({engine.spec().kind}"
          f"{', n_scl=' + str(engine.n_scl) if engine.n_scl else ''}), {result.seconds:.2f}s")
    for line in format_table(result, top=args.top or None):
        print(line)
    value = f"value {result.value:+.4f} (winrate {(1 + result.value) / 2:.1%})"
    if result.cp is not None:
        value += f", cp {result.cp:+.0f}"
    moves_left = f", {result.net_moves_left:.0f} plies left" if result.net_moves_left is not None else ""
    print(f"\nbest {result.best_move}; {value}; root {result.root_value:+.4f}, network {result.net_value:+.4f}"
          f"{moves_left}")
    print("pv " + " ".join(result.pv))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = __doc__
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("--checkpoint", required=True, help="run directory or exported model")
    p.add_argument("--game", default=None, help="the game the checkpoint must play (a check; e.g. go_7x7)")
    p.add_argument("--moves", default=None, help='moves from the start (or from --fen), e.g. "D4 E5"')
    p.add_argument("--fen", default=None, help="chess: the start position")
    p.add_argument("--komi", type=finite_float, default=None, help="Go: komi (default: the checkpoint's)")
    p.add_argument("--visits", type=positive_int, default=None,
                   help="simulations (default: the config's eval_simulations)")
    p.add_argument("--n_scl", type=nonnegative_int, default=None, help="search-contempt node limit (0: off)")
    p.add_argument("--search", choices=["gumbel", "puct"], default=None, help="override the checkpoint's search")
    p.add_argument("--considered", type=positive_int, default=None,
                   help="Gumbel: root moves considered (default: the checkpoint's eval_max_num_considered_actions, "
                        "else its max_num_considered_actions)")
    p.add_argument("--c_scale", type=positive_float, default=None,
                   help="Gumbel: the scale of the searched values against the prior's logits (default: the "
                        "checkpoint's eval_gumbel_c_scale, else its gumbel_c_scale)")
    p.add_argument("--certainty", choices=["off", "visited", "expanded"], default=None,
                   help="lc0's certainty propagation in the search (default: the checkpoint's "
                        "eval_certainty_propagation)")
    p.add_argument("--top", type=nonnegative_int, default=20, help="table rows (0: every legal move)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--positions", default=None, help="file of positions, one per line (batched)")
    p.add_argument("--out", default=None, help="JSON-lines output for --positions")
    p.add_argument("--batch_size", type=positive_int, default=64, help="positions per jitted search (--positions)")
