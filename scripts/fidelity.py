"""The seed papers' headline claims against what azjax's committed results show: results/fidelity.json and
results/fidelity.md, both read from the results files each claim names (nothing here is typed in by hand).

    python -m scripts.fidelity           # (re)write results/fidelity.{json,md}
    python -m scripts.fidelity --check   # exit 1 when either is out of date (tests/test_docs.py)

Each claim gets the setting it was measured in here, the figure with its 95% interval (over seeds where there are
seeds, else over games), how many seeds, and a verdict computed from the figures:
  reproduces / does not reproduce / no difference at 95% / one seed (the issue asks for more) /
  not testable as posed / not measured.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from scripts.results_index import write_or_check

ROOT = Path(__file__).resolve().parents[1]
OUT_JSON = ROOT / "results" / "fidelity.json"
OUT_MD = ROOT / "results" / "fidelity.md"
SAI_RESULTS = "results/sai_7x7"  # lab/sai_7x7/'s files: training runs, komi curves, replay fits
Z95 = 1.959964


def load(path: str) -> dict[str, Any]:
    return json.loads((ROOT / path).read_text())


def r3(x: float) -> float:
    return round(float(x), 3)


# ---------------------------------------------------------------- the claims, each read from its files


def diff95(p1: float, n1: int, p2: float, n2: int) -> tuple[float, float, float]:
    """p1 - p2 of two scores with its 95% normal (Wald) interval."""
    half = Z95 * math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    return p1 - p2, p1 - p2 - half, p1 - p2 + half


def contempt_at_odds(path: str) -> Callable[[], dict[str, Any]]:
    """The odds claim read from one file of `lab/contempt/contempt_odds_connect_four.py`. Verdict: plain PUCT falls when
    its peak score beats its score at the most visits at 95%; an N_scl keeps gaining when its score at the most visits
    beats its score at the fewest at 95%, and wins the claim when it also beats plain there at 95%."""
    def read() -> dict[str, Any]:
        d = load(path)
        cells = d["cells"]
        by = {(str(c["n_scl"]), c["visits"]): c for c in cells}
        visits = sorted({c["visits"] for c in cells})
        settings = [n for n in ("off", "28", "5") if ("off", visits[0]) in by and (n, visits[0]) in by]
        figure = {f"n_scl {n}": {v: [r3(by[(n, v)]["score"]), r3(by[(n, v)]["score_low"]),
                                     r3(by[(n, v)]["score_high"])] for v in visits} for n in settings}

        def diff(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float, float]:
            return diff95(a["score"], a["games"], b["score"], b["games"])

        first, last = visits[0], visits[-1]
        plain_first = by[("off", first)]["score"]
        if plain_first > 0.6:
            verdict = (f"not testable as posed: the giver already scores {plain_first:.2f} at {first} visits, "
                       "where the claim needs 0.3-0.5")
        else:
            peak_visits = max(visits, key=lambda v: by[("off", v)]["score"])
            _, fall_low, _ = diff(by[("off", peak_visits)], by[("off", last)])
            plain_falls = fall_low > 0
            plain_gains = diff(by[("off", last)], by[("off", first)])[1] > 0
            peak = ("its peak at the most visits" if peak_visits == last else
                    f"peak {by[('off', peak_visits)]['score']:.2f} at {peak_visits}, "
                    + ("falls from it at 95%" if plain_falls else "no fall from it at 95%"))
            parts = [f"plain PUCT {plain_first:.2f} -> {by[('off', last)]['score']:.2f} from {first} to {last} visits "
                     f"({'gains' if plain_gains else 'no gain'} at 95%; {peak})"]
            wins = []
            for n in settings[1:]:
                gain = diff(by[(n, last)], by[(n, first)])
                over_plain = diff(by[(n, last)], by[("off", last)])
                keeps_gaining, beats_plain = gain[1] > 0, over_plain[1] > 0
                wins.append(keeps_gaining and beats_plain)
                parts.append(f"n_scl {n} {by[(n, first)]['score']:.2f} -> {by[(n, last)]['score']:.2f} "
                             f"({'gains' if keeps_gaining else 'no gain'} at 95%), minus plain at {last}: "
                             f"{over_plain[0]:+.2f} [{over_plain[1]:+.2f}, {over_plain[2]:+.2f}]")
            verdict = ("reproduces" if plain_falls and any(wins) else "does not reproduce") + ": " + "; ".join(parts)
        return dict(paper="search-contempt", claim="At odds, plain PUCT's score peaks and then falls as visits grow, "
                    "while search-contempt (N_scl) keeps gaining.",
                    setting=f"Connect Four, {d['giver']['checkpoint']} playing second (PUCT, most visits) against "
                            f"{d['opponent']['name']} (the first {d['opponent']['random_moves']} of its moves "
                            f"random); {cells[0]['games']} games a cell, visits {visits}",
                    figure=figure, figure_is="the giver's score [95% interval] by visits", seeds=None,
                    verdict=verdict, sources=[path])
    return read


def _decisive(wins: int, draws: int, losses: int) -> list[float]:
    from azjax.play.arena import wilson_interval

    n = wins + draws + losses
    low, high = wilson_interval((wins + losses) / n, n)
    return [r3((wins + losses) / n), r3(low), r3(high)]


def contempt_decisiveness() -> dict[str, Any]:
    c4_path, chess_path = "results/contempt/contempt_sweep_connect_four.json", "results/contempt/contempt_sweep.json"
    c4 = {str(s["n_scl"]): s for s in load(c4_path)["settings"] if s["tau"] == 1.0}
    chess = {str(s["n_scl"]): s["adjudicated"] for s in load(chess_path)["settings"] if s["tau"] == 1.0}
    figure = {"connect_four": {n: _decisive(c4[n]["wins"], c4[n]["draws"], c4[n]["losses"]) for n in ("off", "5", "1")},
              "chess (3-pawn adjudication)": {n: _decisive(chess[n]["wins"], chess[n]["draws"], chess[n]["losses"])
                                             for n in ("off", "5", "1")}}
    # More decisive than plain where the decisive share's interval lies wholly above plain's.
    def above(n: str) -> str:
        games = [g for g, rows in figure.items() if rows[n][1] > rows["off"][2]]
        rest = [g for g in figure if g not in games]
        return (f"n_scl {n}: more decisive than plain at 95% in {', '.join(games) or 'no game'}"
                + (f", not in {', '.join(rest)}" if games and rest else ""))
    verdict = "; ".join(above(n) for n in ("1", "5"))
    return dict(paper="search-contempt", claim="N_scl controls the win/draw/loss distribution of self-play: a smaller "
                "N_scl gives more decisive games.",
                setting="self-play at tau = 1, 64 games a setting, 64 simulations: Connect Four's quick model; "
                        "chess with a material evaluator, adjudicated at 80 plies by a 3-pawn edge",
                figure=figure, figure_is="decisive share (w + l) / games [95% interval] by n_scl", seeds=1,
                verdict=verdict + " (one run per game)",
                sources=[c4_path, chess_path])


def error_difference(low: float, high: float, than: str = "") -> str:
    """A 95% interval of (variant minus AlphaZero) errors in words: fewer or more errors`than`, or no difference."""
    words = "fewer errors" if high < 0 else "more errors" if low > 0 else None
    return f"{words}{than} at 95%" if words else "no difference at 95%"


def error_verdict(low: float, high: float, than: str = "") -> str:
    """`error_difference` as the verdict on a claim of fewer errors than AlphaZero's."""
    difference = error_difference(low, high, than)
    if low <= 0 <= high:
        return difference
    return f"{'reproduces' if high < 0 else 'does not reproduce'} ({difference})"


def auc_difference(row: dict[str, Any]) -> str:
    """What a variant's row of a variants sweep's table says against AlphaZero (the paired difference's interval)."""
    return error_difference(row["diff_low"], row["diff_high"], " than AlphaZero")


def auc_verdict(row: dict[str, Any]) -> str:
    """`auc_difference` as a verdict on a claim of faster learning at equal self-play positions."""
    return error_verdict(row["diff_low"], row["diff_high"], " than AlphaZero")


HOUR_SWEEP = "results/connect_four/variants_connect_four_hour.json"
HOUR_COMMAND = ("AZJAX_CPU_DEVICES=2 python -m lab.connect_four.variants_connect_four --preset hour --num_steps 1400 "
                "--variants alphazero contempt_5 tdleaf_0.7 playout_cap go_exploit_visited go_exploit_visited_0.1 "
                "go_exploit_search --seeds 2 --resume")


HOUR_ROUND_ROBINS = "results/arena/connect_four_hour_sweep*/results.json"
# Runs of the sweep made again, with the same command and seed, to rebuild a final network that was not kept.
HOUR_RERUNS = "results/connect_four/variants_connect_four_hour_reruns.json"


def hour_round_robins() -> dict[str, dict[str, Any]]:
    """Every `azjax arena` round robin among the hour sweep's final networks, by path (one per batch of models
    kept, so a later variant's networks need not replay the earlier pairings)."""
    paths = (str(path.relative_to(ROOT)) for path in sorted(ROOT.glob(HOUR_ROUND_ROBINS)))
    return {path: load(path) for path in paths}


def round_robin_against_alphazero(arena: dict[str, Any], variant: str) -> dict[str, Any] | None:
    """`variant`'s final networks against AlphaZero's in an `azjax arena` round robin whose agents are named
    `<variant>_seed<n>`: every game between a seed of one and a seed of the other, pooled, from the variant's side,
    with the variant's seeds that played. The score's interval is over games (Wilson, as the arena's); None where no
    such pairing was played."""
    from azjax.play.arena import elo_from_score, wilson_interval

    def seed_of(name: str, v: str) -> int | None:
        seed = name.removeprefix(f"{v}_seed")
        return int(seed) if seed != name and seed.isdigit() else None

    wins = draws = losses = 0
    seeds: set[int] = set()
    for p in arena["pairings"]:
        for a, b, sign in ((p["name_a"], p["name_b"], 1), (p["name_b"], p["name_a"], -1)):
            if (seed := seed_of(a, variant)) is not None and seed_of(b, "alphazero") is not None:
                won, lost = (p["wins"], p["losses"])[::sign]
                wins, draws, losses = wins + won, draws + p["draws"], losses + lost
                seeds.add(seed)
    games = wins + draws + losses
    if games == 0:
        return None
    score = (wins + draws / 2) / games
    low, high = wilson_interval(score, games)
    return dict(games=games, seeds=sorted(seeds), score=score, low=low, high=high, elo=float(elo_from_score(score)),
                elo_low=float(elo_from_score(low)), elo_high=float(elo_from_score(high)))


def rerun_networks(sweep: dict[str, Any], variant: str, seeds: list[int]) -> str:
    """A clause naming which of `variant`'s `seeds` played a round robin with a rerun's network (`HOUR_RERUNS`),
    with the rerun's area beside the sweep's own run of that seed; empty where none did."""
    if not (ROOT / HOUR_RERUNS).exists():
        return ""
    areas = {r["seed"]: r["auc"] for r in sweep["runs"] if r["variant"] == variant}
    reruns = [r for r in load(HOUR_RERUNS)["runs"] if r["variant"] == variant and r["seed"] in seeds]
    if not reruns:
        return ""
    # A rerun need not repeat its run (float32 sums may differ in their last bits between CPU kinds,
    # tests/train/test_golden.py, and self-play amplifies them): it is a new draw of the same seed.
    return " " + "; ".join(f"(seed {r['seed']}'s network from a rerun of its run, {HOUR_RERUNS}: area "
                     f"{100 * r['auc']:.2f}% against the sweep's {100 * areas[r['seed']]:.2f}%, a new draw of the same "
                     "seed)" for r in reruns)


def equal_search_verdict(variant: str, same: dict[str, Any]) -> str:
    """One line for `at_equal_search`'s figures: the verdict on a claim per unit of compute."""
    seeds = "; ".join(f"seed {p['seed']}: {100 * p['variant']:.2f}% against {100 * p['alphazero']:.2f}% at AlphaZero's "
                      f"step {p['alphazero_step']:.0f}" for p in same["pairs"])
    head = (f"{variant} at equal search simulations (the claim's measure: {variant} spends {same['ratio']:.3f} of "
            f"AlphaZero's a move; final error rates)")
    if same["low"] is None:
        return f"{head} {seeds}: one seed, no interval"
    return (f"{head} {seeds}; difference {100 * same['diff']:+.2f} [{100 * same['low']:+.2f}, "
            f"{100 * same['high']:+.2f}] points: {error_verdict(same['low'], same['high'])}")


def openings(arena: dict[str, Any]) -> str:
    """How a round robin's games began: random plies, or positions from a file."""
    if arena.get("openings"):
        return f"openings from {arena['openings']}"
    plies = arena.get("random_opening_plies", 0)
    return f"{plies} random opening plies" if plies else "from the initial position"


def round_robin_verdict(path: str, arena: dict[str, Any], variant: str, rr: dict[str, Any]) -> str:
    """One line for `round_robin_against_alphazero`'s figures in the round robin at `path`, with the search budget
    the agents played at."""
    budgets = sorted({spec.split(":")[1] for spec in arena["agents"].values() if ":" in spec})
    verdict = ("stronger at 95%" if rr["low"] > 0.5 else "weaker at 95%" if rr["high"] < 0.5
               else "no difference at 95%")
    return (f"round robin ({path}, {'/'.join(budgets)} simulations a move, {openings(arena)}): {variant} "
            f"(seed{'s' * (len(rr['seeds']) != 1)} {', '.join(map(str, rr['seeds']))}) scores "
            f"{rr['score']:.3f} [{rr['low']:.3f}, {rr['high']:.3f}] against alphazero over {rr['games']} games, "
            f"Elo {rr['elo']:+.0f} [{rr['elo_low']:+.0f}, {rr['elo_high']:+.0f}]: {verdict}")


def simulations_per_move(sweep: dict[str, Any], variant: str) -> float:
    """The search simulations a self-play move of `variant` spends on average: with playout caps a full search
    with probability full_search_prob, else a fast one of fast_simulations."""
    config = sweep_config(sweep, variant)
    p = config.full_search_prob
    return p * config.num_simulations + (1 - p) * config.fast_simulations


def at_equal_search(sweep: dict[str, Any], variant: str) -> dict[str, Any] | None:
    """`variant`'s final error rate against AlphaZero's after the same number of search simulations, seed by seed:
    AlphaZero's curve read (linearly between its evaluation points) at the step where it had spent what the
    variant spent in its whole run. None where the variant searches as much as AlphaZero or no seed pairs up."""
    ratio = simulations_per_move(sweep, variant) / simulations_per_move(sweep, "alphazero")
    if ratio >= 1:
        return None
    curves = {(r["variant"], r["seed"]): r["curve"] for r in sweep["runs"]}
    pairs = []
    for (v, seed), curve in sorted(curves.items()):
        reference = curves.get(("alphazero", seed))
        if v != variant or reference is None:
            continue
        step = curve[-1]["step"] * ratio
        points = [(p["step"], p["error_rate"]) for p in reference]
        below = [(s, e) for s, e in points if s <= step]
        above = [(s, e) for s, e in points if s >= step]
        if not below or not above:
            continue  # before AlphaZero's first evaluation: nothing to read
        (s0, e0), (s1, e1) = below[-1], above[0]
        alphazero = e0 if s1 == s0 else e0 + (e1 - e0) * (step - s0) / (s1 - s0)
        pairs.append(dict(seed=seed, alphazero_step=step, alphazero=alphazero, variant=curve[-1]["error_rate"]))
    if not pairs:
        return None
    from azjax.play.arena import t_interval

    diff, low, high = t_interval([p["variant"] - p["alphazero"] for p in pairs])
    return dict(ratio=ratio, pairs=pairs, diff=diff, low=low, high=high)


def sweep_config(sweep: dict[str, Any], variant: str) -> Any:
    """The config (a `Config`) of `variant`'s runs in a variants sweep: its preset with the variant's switches."""
    from azjax.config import preset

    return preset("connect_four", sweep["args"].get("preset", "quick"), **sweep.get("variant_switches", {}).get(
        variant, {}))


def inert_at(sweep: dict[str, Any], variant: str) -> int | None:
    """The preset's simulation budget where `variant`'s search-contempt (its n_scl) cannot act there; else None."""
    from azjax.config import inert_contempt

    config = sweep_config(sweep, variant)
    return config.num_simulations if inert_contempt(config) is not None else None


def repeats_alphazero(runs: list[dict[str, Any]], variant: str) -> list[int]:
    """The seeds at which `variant`'s curve is AlphaZero's, point for point: the same errors on every set (the
    value-loss probe and the wall times are left out: they vary from run to run of the same network)."""
    graded = lambda curve: [(p["step"], p["error_rate"], p["sets"]) for p in curve]  # noqa: E731
    curves = {(r["variant"], r["seed"]): graded(r["curve"]) for r in runs}
    return sorted(seed for (v, seed), curve in curves.items()
                  if v == variant and curves.get(("alphazero", seed)) == curve)


def hour_variant_claim(variants: tuple[str, ...], switches: str, paper: str,
                       claim: str) -> Callable[[], dict[str, Any]]:
    """A claim read from the Connect Four `hour` sweep (`lab/connect_four/variants_connect_four.py --preset hour`):
    each of `variants` against AlphaZero's runs of the same seeds, as far as the sweep has run (about 85 minutes a
    run, so it spans sessions with `--resume`). `switches` describes the variants in the setting."""
    def read() -> dict[str, Any]:
        if not (ROOT / HOUR_SWEEP).exists():
            return dict(paper=paper, claim=claim,
                        setting=f"planned: Connect Four `hour`, {switches}, 2 seeds each ({HOUR_COMMAND})",
                        figure=None, figure_is=None, seeds=0, verdict="not measured", sources=[])
        d = load(HOUR_SWEEP)
        arenas = hour_round_robins()
        table = {v: row for v, row in d["table"].items() if v in ("alphazero", *variants)}
        # One seed has no interval: its mean alone.
        figure = {v: [r3(row["auc_mean"]), r3(row["auc_low"]), r3(row["auc_high"])] if row["seeds"] > 1
                  else r3(row["auc_mean"]) for v, row in table.items()}
        done = ", ".join(f"{r['variant']} seed {r['seed']}" for r in d["runs"] if r["variant"] in table)
        verdicts, sources = [], [HOUR_SWEEP]
        inert = {v: inert_at(d, v) for v in table}
        for v in variants:
            row = table.get(v)
            # A variant that searches less a move (playout caps) claims more per unit of compute: it is judged at
            # equal search simulations first, and its area at equal positions is reported beside, not as a verdict.
            tested = row is not None and "alphazero" in table and inert[v] is None
            same_search = at_equal_search(d, v) if tested else None
            if same_search is not None:
                verdicts.append(equal_search_verdict(v, same_search))
            if row is not None and (budget := inert[v]) is not None:
                same = repeats_alphazero(d["runs"], v)
                verdicts.append(f"{v}: inert here (n_scl {d['variant_switches'][v]['n_scl']} >= the preset's {budget} "
                                f"simulations, so no node freezes); its seed{'s' * (len(same) != 1)} "
                                f"{', '.join(map(str, same)) or 'none'} repeat{'s' * (len(same) == 1)} AlphaZero's "
                                "curve exactly, as the off-rule says: not a test of the claim")
            elif row is None or "alphazero" not in table:
                verdicts.append(f"{v}: not run beside AlphaZero yet")
            elif row["seeds_paired"] < 2:
                verdicts.append(f"{v}: {row['seeds_paired']} seed paired with AlphaZero (the issue asks for 2), "
                                f"difference {row['auc_minus_alphazero']:+.3f} without an interval")
            else:
                figure[f"{v} minus alphazero"] = [r3(row["auc_minus_alphazero"]), r3(row["diff_low"]),
                                                  r3(row["diff_high"])]
                verdicts.append(f"{v}: {auc_verdict(row)}" if same_search is None else
                                f"{v} at equal self-play positions, with {same_search['ratio']:.3f} of AlphaZero's "
                                f"search: {auc_difference(row)}")
            if tested:
                # The final networks' round robins, where one was played.
                for path, arena in arenas.items():
                    if rr := round_robin_against_alphazero(arena, v):
                        sources.append(path)
                        rerun = rerun_networks(d, v, rr["seeds"])
                        sources += [HOUR_RERUNS] if rerun else []
                        verdicts.append(round_robin_verdict(path, arena, v, rr) + rerun)
        return dict(paper=paper, claim=claim,
                    setting=f"Connect Four `hour` preset, {d['args']['num_steps']} loop steps a run, {switches}, at "
                            f"equal self-play positions; Pons' sets {', '.join(d['args']['sets'])}, area under the "
                            f"error curve ({HOUR_COMMAND}); runs so far: {done}",
                    figure=figure, figure_is="area under the error curve [95% t-interval over seeds]",
                    # An inert variant's runs test nothing, so its seeds do not count against the others'.
                    # A variant not run yet has no seeds.
                    seeds=min((table[v]["seeds"] if v in table else 0 for v in ("alphazero", *variants)
                               if v not in table or inert[v] is None), default=0),
                    verdict="; ".join(verdicts),
                    sources=list(dict.fromkeys(sources)))
    return read


def sai_preset_config() -> Any:
    """The go_7x7 `sai` preset as committed now (a `Config`)."""
    from azjax.config import preset

    return preset("go_7x7", "sai")


def sai_preset_differences(run: dict[str, Any], preset_config: Any) -> dict[str, Any] | None:
    """The fields a run's file records (read as a checkpoint's config is: older files' values in today's terms)
    whose values are not the preset's, the seed aside; None when the file's config is no Config of today's. Fields
    added to Config after the run was made are not compared: its file cannot say."""
    recorded = run.get("config", {})
    try:
        config = type(preset_config).from_dict(recorded)
    except (TypeError, ValueError):  # a field this Config no longer has
        return None
    return {k: getattr(config, k) for k in recorded if k != "seed" and getattr(config, k) != getattr(preset_config, k)}


def is_sai_preset_seed(run: dict[str, Any], preset_config: Any) -> bool:
    """A finished run of the preset as committed, with any seed."""
    return bool(run.get("finished", True)) and sai_preset_differences(run, preset_config) == {}


def other_setting(path: str, run: dict[str, Any], preset_config: Any) -> str:
    """A run beside the seeds, named with what sets it apart: e.g. `sai_7x7_seed1 (num_steps 1500)`."""
    differences = sai_preset_differences(run, preset_config)
    if differences is None:
        what = "fields this Config no longer has"
    else:
        shown = [f"{k} {v}" for k, v in differences.items() if k != "init_from"]
        shown += ["continued from another run"] if differences.get("init_from") else []
        shown += [] if run.get("finished", True) else ["not finished"]
        what = ", ".join(shown[:3]) + (", ..." if len(shown) > 3 else "")
    return f"other setting: {Path(path).stem} ({what})"


def seeds_of_other_settings(others: dict[str, dict[str, Any]], preset_config: Any) -> dict[str, list[dict]]:
    """Finished runs that differ from the preset in the same fields, by at least two seeds: a candidate change to
    the preset, over seeds (e.g. `num_simulations 32` -> its runs)."""
    groups: dict[str, dict[int, dict]] = {}
    for run in others.values():
        differences = sai_preset_differences(run, preset_config)
        if differences and run.get("finished", True) and not differences.get("init_from"):
            setting = ", ".join(f"{k} {v}" for k, v in sorted(differences.items()))
            groups.setdefault(setting, {})[run["config"]["seed"]] = run
    return {setting: list(by_seed.values()) for setting, by_seed in sorted(groups.items()) if len(by_seed) >= 2}


# The SAI paper's Table I: each representative 7x7 run's time to plateau (TTP), in millions of search nodes
# (runs 9, 15, 20, 22, 23, 24).
SAI_PAPER_MILLION_NODES_TO_PLATEAU = (1838, 1194, 463, 2545, 465, 528)


def span(values: Iterable[int]) -> str:
    """The values' range, 'low-high', or the one value when they are all equal."""
    distinct = sorted(set(values))
    return f"{distinct[0]}-{distinct[-1]}" if len(distinct) > 1 else f"{distinct[0]}"


def search_million_nodes(run: dict[str, Any]) -> float:
    """The search nodes a run spent in self-play, in millions: positions played (steps x games in flight x moves a
    step) x simulations a move, the unit of the SAI paper's time to plateau."""
    c = run["config"]
    return run["steps"] * c["num_envs"] * c["moves_per_step"] * c["num_simulations"] / 1e6


def sai_plus_nine() -> dict[str, Any]:
    """SAI's +9 over seeds of the `sai` preset as committed. Every results/sai_7x7/sai_7x7*.json of
    `lab/sai_7x7/sai_7x7.py` (a file with the estimate's `last_quarter`) whose config is the preset's, the seed aside,
    is a seed; the runs at other settings (older presets, changed fields, continuations, runs not finished) stand
    beside them."""
    preset_config = sai_preset_config()
    files = sorted((ROOT / SAI_RESULTS).glob("sai_7x7*.json"))
    runs = {str(f.relative_to(ROOT)): run for f in files if "last_quarter" in (run := json.loads(f.read_text()))}
    seeds = {p: r for p, r in runs.items() if is_sai_preset_seed(r, preset_config)}
    seeds = dict(sorted(seeds.items(), key=lambda kv: kv[1]["config"]["seed"]))
    others = {p: r for p, r in runs.items() if p not in seeds}
    perfect = next(iter(runs.values()))["perfect_play_black_lead"]  # +9: every run's file records it
    figure = {f"sai preset, seed {s['config']['seed']}": [r3(s["last_quarter"]["mean"]), r3(s["last_quarter"]["min"]),
                                                         r3(s["last_quarter"]["max"])] for s in seeds.values()}
    figure |= {other_setting(p, o, preset_config): [r3(o["last_quarter"]["mean"]), r3(o["last_quarter"]["min"]),
                                                    r3(o["last_quarter"]["max"])] for p, o in others.items()}

    def within_one(group: Iterable[dict[str, Any]]) -> int:
        return sum(abs(run["last_quarter"]["mean"] - perfect) <= 1 for run in group)

    within = within_one(seeds.values())
    n = len(seeds)
    if n < 3:
        verdict = f"{n} seed{'' if n == 1 else 's'} (the issue asks for 3): {within} within +-1"
    else:
        verdict = (f"reproduces: {within} of {n} seeds within +-1" if within >= 3
                   else f"does not reproduce: {within} of {n} seeds within +-1")
    verdict += (f"; of {len(others)} runs at other settings, "
                f"{within_one(others.values())} within +-1")
    for setting, group in seeds_of_other_settings(others, preset_config).items():
        verdict += f"; seeds at {setting}: {within_one(group)} of {len(group)} within +-1"
    size = (f", {span(s['games'] for s in seeds.values())} games a seed, "
            f"{span(round(search_million_nodes(s)) for s in seeds.values())} million search nodes a seed (the paper's "
            f"runs reached their plateau after {span(SAI_PAPER_MILLION_NODES_TO_PLATEAU)} million, its Table I)"
            if seeds else "")
    curves = sai_seed_komi_curves(seeds, preset_config)
    fits = sai_replay_fits()
    diagnosis = "; ".join(d for d in (komi_curve_diagnosis(curves) if curves else "",
                                      replay_fit_diagnosis(fits) if fits else "") if d)
    return dict(paper="SAI", claim="On 7x7 the empty-board estimate of Black's lead converges to the perfect-play +9 "
                "(within +-1).",
                setting=f"7x7 `sai` preset, {preset_config.num_steps} steps{size}; the last quarter of training",
                figure=figure, figure_is="the estimate's last-quarter mean [min, max] (points)", seeds=n,
                verdict=verdict, diagnosis=diagnosis or None, sources=[*seeds, *others, *curves, *fits])


def sai_seed_komi_curves(seeds: dict[str, dict[str, Any]], preset_config: Any) -> dict[str, dict[str, Any]]:
    """The seeds' self-play komi curves, where they were measured: each results/sai_7x7/sai_7x7*komi_curve*.json of
    `lab/sai_7x7/sai_komi_curve.py` whose model was trained with a seed's config and which played itself as in that
    training (its simulations, sampling window and root noise). Matched by the model's config.json, not by file name: a
    preset that changes its search keeps its length, and names built from the length would pair the new seeds
    with the old seeds' curves."""
    configs = [type(preset_config).from_dict(r["config"]) for r in seeds.values()]
    curves = {}
    for f in sorted((ROOT / SAI_RESULTS).glob("sai_7x7*komi_curve*.json")):
        d = json.loads(f.read_text())
        model_config = ROOT / d.get("model", "") / "config.json"
        if not model_config.is_file():
            continue
        trained = type(preset_config).from_json(model_config.read_text())
        if any(trained == c and d.get("simulations") == c.num_simulations
               and d.get("temperature_moves") == c.temperature_moves
               and d.get("gumbel_scale", c.gumbel_scale) == c.gumbel_scale for c in configs):
            curves[str(f.relative_to(ROOT))] = d
    return curves


def komi_curve_diagnosis(curves: dict[str, dict[str, Any]]) -> str:
    """Where each seed's own self-play breaks even, beside what its network reads: whether the estimate follows the
    agent (inside the self-play interval) or lags it."""
    rows, inside = [], 0
    for d in curves.values():
        fit, net = d["selfplay_fit"], d["net"]["empty_board_black_lead"]
        inside += fit["black_lead_low"] <= net <= fit["black_lead_high"]
        interval = fmt([r3(fit["black_lead"]), r3(fit["black_lead_low"]), r3(fit["black_lead_high"])])
        rows.append(f"{Path(d['model']).name}: {interval} (its network reads {r3(net)})")
    games = sorted({d["games_per_komi"] for d in curves.values()})
    return (f"where each seed's self-play breaks even (lab/sai_7x7/sai_komi_curve.py, {'/'.join(map(str, games))} "
            f"games a komi, 95% bootstrap interval): " + "; ".join(rows)
            + f". The network's estimate lies inside its own self-play's interval in {inside} of {len(curves)}: "
            + ("each estimate follows its own agent's self-play, so what sets the level is where that agent breaks even"
               if inside == len(curves) else "some estimates lag their own agents"))


def sai_replay_fits() -> dict[str, dict[str, Any]]:
    """Every fit of `lab/sai_7x7/sai_replay_fit.py`: results/sai_7x7/sai_7x7*_replay_fit.json (a run's end) and
    results/sai_7x7/sai_7x7*_replay_fits/step_N.json (its checkpoints on the way), one a run and step, by file name."""
    results = ROOT / SAI_RESULTS
    files = [*results.glob("sai_7x7*_replay_fit.json"), *results.glob("sai_7x7*_replay_fits/*.json")]
    fits: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, int]] = set()
    for f in sorted(files):
        d = json.loads(f.read_text())
        if (d["run_dir"], d["step"]) not in seen:
            seen.add((d["run_dir"], d["step"]))
            fits[str(f.relative_to(ROOT))] = d
    return fits


def replay_fit_diagnosis(fits: dict[str, dict[str, Any]]) -> str:
    """How far the averaged weights' estimate sits from where the replay's empty-board games break even, the data it
    is trained on, over every checkpoint fitted: a faithful estimate stays near its data, lagging while the data
    moves."""
    gaps = [d["net"]["averaged"]["black_lead"] - d["fit_all"]["black_lead"] for d in fits.values()]
    inside = sum(d["fit_all"]["black_lead_low"] <= d["net"]["averaged"]["black_lead"] <= d["fit_all"]["black_lead_high"]
                 for d in fits.values())
    runs = sorted({Path(d["run_dir"]).name for d in fits.values()})
    return (f"where the replay's empty-board games break even (lab/sai_7x7/sai_replay_fit.py, {len(fits)} "
            f"checkpoints of {len(runs)} run{'' if len(runs) == 1 else 's'}: {', '.join(runs)}): the averaged "
            f"estimate lies within "
            f"{max(map(abs, gaps)):.2f} points of it at every checkpoint, inside its 95% interval at {inside} and "
            f"below it at {sum(g < 0 for g in gaps)} (the average trails the games while they move)")


def variant_claim(key: str, paper: str, claim: str) -> Callable[[], dict[str, Any]]:
    def read() -> dict[str, Any]:
        path = "results/connect_four/variants_connect_four.json"
        d = load(path)
        row, base = d["table"][key], d["table"]["alphazero"]
        diff = [r3(row["auc_minus_alphazero"]), r3(row["diff_low"]), r3(row["diff_high"])]
        verdict = auc_verdict(row)
        return dict(paper=paper, claim=claim,
                    setting=f"Connect Four quick preset, {d['args']['num_steps']} loop steps, switches "
                            f"{d['variant_switches'][key]}; Pons' sets, area under the error curve",
                    figure={"variant": [r3(row["auc_mean"]), r3(row["auc_low"]), r3(row["auc_high"])],
                            "alphazero": [r3(base["auc_mean"]), r3(base["auc_low"]), r3(base["auc_high"])],
                            "difference": diff},
                    figure_is="area under the error curve [95% t-interval over seeds]", seeds=row["seeds"],
                    verdict=verdict, sources=[path])
    return read


# The papers' claims, each measured at the quick scale and at the `hour` scale.
GO_EXPLOIT_VISITED = ("Starting self-play from an archive of visited states learns more per sample than starting "
                      "every game at the initial state.")
GO_EXPLOIT_SEARCH = "An archive of search-tree states does better still."
TDLEAF = "TD(lambda) targets along the principal variation learn faster than the game's outcome."
PLAYOUT_CAP = "Playout caps (full searches on a quarter of the moves, trained on) learn more per unit of compute."

CLAIMS: list[Callable[[], dict[str, Any]]] = [
    contempt_at_odds("results/contempt/contempt_odds_connect_four_vs_hour.json"),
    contempt_at_odds("results/contempt/contempt_odds_connect_four.json"),
    contempt_decisiveness,
    hour_variant_claim(("contempt_5", "contempt_28"), "self-play at n_scl off / 5 / 28", "search-contempt",
                       "Self-play at N_scl = 5 trains a stronger player than plain PUCT at equal compute (+70 Elo in "
                       "the reference code's README)."),
    sai_plus_nine,
    variant_claim("go_exploit_visited", "Go-Exploit", GO_EXPLOIT_VISITED),
    variant_claim("go_exploit_search", "Go-Exploit", GO_EXPLOIT_SEARCH),
    hour_variant_claim(("go_exploit_visited",), "self-play starting at an archive of visited states with probability "
                       "0.99 (start_state_prob 0.01)", "Go-Exploit", GO_EXPLOIT_VISITED),
    hour_variant_claim(("go_exploit_visited_0.1",), "self-play starting at an archive of visited states with "
                       "probability 0.9 (start_state_prob 0.1, the paper's 9x9 Go setting: ten times the empty-board "
                       "starts)", "Go-Exploit", GO_EXPLOIT_VISITED),
    hour_variant_claim(("go_exploit_search",), "self-play starting at an archive of search-tree states with "
                       "probability 0.99 (start_state_prob 0.01)", "Go-Exploit", GO_EXPLOIT_SEARCH),
    variant_claim("tdleaf_0.7", "TDLeaf(lambda)", TDLEAF),
    variant_claim("playout_cap", "KataGo", PLAYOUT_CAP),
    hour_variant_claim(("tdleaf_0.7",), "TD(lambda) targets at lambda 0.7 against the outcome", "TDLeaf(lambda)",
                       TDLEAF),
    hour_variant_claim(("playout_cap",), "playout caps (full searches of p = 0.25 of the moves, 4 fast simulations "
                       "on the rest) against full searches everywhere", "KataGo", PLAYOUT_CAP),
]


# ---------------------------------------------------------------- output


def fmt(v: Any) -> str:
    if isinstance(v, list) and len(v) == 3:
        return f"{v[0]} [{v[1]}, {v[2]}]"
    if isinstance(v, dict):
        return "; ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    return str(v)


def render(claims: list[dict[str, Any]]) -> str:
    lines = ["# The seeds' claims, measured here", "",
             "Written by `python -m scripts.fidelity` from the results files each row names "
             "([fidelity.json](fidelity.json) holds the same). A verdict is computed from the figures.", ""]
    for c in claims:
        lines += [f"## {c['paper']}: {c['claim']}", "", f"- Setting: {c['setting']}"]
        if c["figure"] is not None:
            lines.append(f"- Figure ({c['figure_is']}): {fmt(c['figure'])}")
        lines += [f"- Seeds: {c['seeds'] if c['seeds'] is not None else 'one match (intervals over games)'}",
                  f"- Verdict: **{c['verdict']}**"]
        if c.get("diagnosis"):
            lines.append(f"- Why: {c['diagnosis']}")
        if c["sources"]:
            lines.append("- Files: " + ", ".join(f"[{s}]({Path(s).relative_to('results')})" for s in c["sources"]))
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when results/fidelity.{json,md} are out of date")
    args = parser.parse_args(argv)
    claims = [read() for read in CLAIMS]
    written = {OUT_JSON: json.dumps({"command": "python -m scripts.fidelity", "claims": claims}, indent=1) + "\n",
               OUT_MD: render(claims)}
    return write_or_check(written, args.check, "python -m scripts.fidelity")


if __name__ == "__main__":
    sys.exit(main())
