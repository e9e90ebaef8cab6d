"""Writes results/README.md, an index of the JSON result files under results/, and the headline table of README.md.

    python -m scripts.results_index           # (re)write results/README.md and README.md's table
    python -m scripts.results_index --check   # exit 1 when either is not what this would write

Every JSON file under results/ that git does not ignore is listed (without git: every JSON file there), except the
`config.json` files of runs and models and the path map. Each entry gives the file's path, what it measures (read from
the command that wrote it, else the file's top-level keys), a headline figure where the file has an obvious one, and
the command that wrote it when the file records one (a "command" key).

Files and folders that moved are named in results/path_map.json (old path -> new path; a folder's entry moves every
path under it): the results files keep the commands that wrote them, old paths and all. `--check` also checks the map:
every old path is gone, every new path is there, and every script that results/ or the docs name
(`lab/sai_7x7/sai_7x7.py`, or `python -m lab.sai_7x7.sai_7x7` in a command) is in the repository or moved there
through the map.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from azjax.hosts import GPU_COMMAND_BUFFER_FLAG, GPU_COMMAND_BUFFER_TYPES

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
INDEX = RESULTS / "README.md"
README = ROOT / "README.md"
PATH_MAP = RESULTS / "path_map.json"
TABLE_START = ("<!-- the table is written by python -m scripts.results_index from the files its scores link "
               "to -->")
TABLE_END = "<!-- end of the written table -->"
GPU_TABLE_START = "<!-- the GPU table is written by python -m scripts.results_index from results/gpu/ -->"
GPU_TABLE_END = "<!-- end of the written GPU table -->"
TEST_TIMES_START = ("<!-- the test times are written by python -m scripts.results_index from "
                    "results/speed/test_times_*.json -->")
TEST_TIMES_END = "<!-- end of the written test times -->"

SCRIPT_PACKAGES = ("scripts.", "lab.")  # a script's module name starts with one of these
# What a file measures, by the program that wrote it (an `azjax` subcommand or a script under scripts/).
MEASURES: dict[str, str] = {
    "azjax arena": "games among agents (round robin or gauntlet): scores with 95% intervals and an Elo fit",
    "azjax bench": "speed: self-play simulations per second against the network-only rate and a plain mctx loop, "
                   "and what the command's flags add (phase breakdown, search at many visits, devices)",
    "azjax eval": "a match between two agents: score with its 95% interval and the Elo difference",
    "azjax plan": "what a run holds per device (loop state, search tree, SGD step) before it compiles",
    "azjax sweep": "many training runs as one program: the grid, the runs and a table per grid point",
    "bench_go_rules.py": "speed of azjax's Go rules against pgx's own, random games",
    "bench_sgd_scan.py": "time of the network's forward pass and gradient, by batch size",
    "bench_sweep.py": "a sweep of runs as one program against the same runs one after another",
    "bench_xla_flags.py": "the loop's compile and step time under XLA flag sets, as ratios to the first set",
    "compile_time.py": "time to build and run the first loop step with a cold and a warm compilation cache",
    "contempt_odds_connect_four.py": "score of the side playing second against visits, plain PUCT and search-contempt",
    "contempt_sweep.py": "self-play (w+l)/d and repeated game prefixes against search-contempt's n_scl",
    "engine_matches.py": "azjax against Stockfish and GNU Go under a clock through UCI and GTP: scores and Elo",
    "engine_clock.py": "the engines under a GUI's clock: start-up seconds, compiles after ready, and per move the "
                       "seconds used against the time available",
    "fidelity.py": "the seed papers' claims against the results files: figure, interval, seeds and verdict",
    "eval_cache.py": "how often an evaluation cache would hit in engine games, with tree reuse and without",
    "pons_benchmark.py": "errors on Pons' solver-labelled Connect Four test sets (a move that changes the result)",
    "pons_coverage.py": "errors on Pons' sets, split by whether the run's self-play reached each position",
    "pons_values.py": "values of Pons' positions grouped by their perfect-play result, with the win-loss AUC",
    "sai_7x7.py": "a 7x7 SAI training run: the empty-board estimate of Black's board lead over time",
    "time_tests.py": "wall time of the test suite or its fast tier, with pytest's summary line",
    "chess_endings.py": "how an arena's chess games ended, and the material lead at the end",
    "tree_reuse_match.py": "an engine with tree reuse against the same engine without, at an equal time per move",
    "sai_komi_curve.py": "a SAI model's self-play score against komi, with a fitted sigmoid beside the network's",
    "sai_replay_fit.py": "where a SAI run's replayed empty-board games break even against komi, beside its network's "
                         "estimate",
    "variants_connect_four.py": "method variants trained alike and graded on Pons' sets (area under the error curve)",
    "vs_mcts_solver.py": "games against OpenSpiel's MCTS-Solver",
}


def repository_files(root: Path, folder: str = ".") -> set[Path]:
    """The files under `root`/`folder` that git does not ignore (without git: every file there)."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", folder],
                             cwd=root, capture_output=True, text=True, check=True).stdout
        files = {root / name for name in out.split("\0") if name}
    except (OSError, subprocess.CalledProcessError):  # no git, or not a git checkout
        files = set((root / folder).rglob("*"))
    return {f for f in files if f.is_file()}


def result_files() -> list[Path]:
    """The JSON files under results/ that git does not ignore, sorted, without run and model configs or the path map."""
    kept = [f for f in repository_files(ROOT, "results")
            if f.suffix == ".json" and f.name != "config.json" and f != PATH_MAP]
    return sorted(kept, key=lambda f: (f.parent.as_posix(), f.name))  # a folder's own files before its subfolders


def program(command: str) -> str | None:
    """The `MEASURES` key of the program a command ran: `azjax SUBCOMMAND` or a script's file name."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, word in enumerate(words):
        if Path(word).name == "azjax" and i + 1 < len(words):
            return f"azjax {words[i + 1]}"
        if word.endswith(".py"):
            return Path(word).name
        if word == "-m" and i + 1 < len(words) and words[i + 1].startswith(SCRIPT_PACKAGES):
            return words[i + 1].rsplit(".", 1)[-1] + ".py"  # `python -m lab.sai_7x7.sai_7x7`: sai_7x7.py
    return None


def score(d: dict[str, Any]) -> str:
    """`A vs B: 0.943 [0.901, 0.967] (+W =D -L)` of a match result (`azjax.play.arena.MatchResult` fields)."""
    return (f"{d['name_a']} vs {d['name_b']}: {d['score']:.3f} [{d['score_low']:.3f}, {d['score_high']:.3f}] "
            f"(+{d['wins']} ={d['draws']} -{d['losses']})")


def arena_headline(d: dict[str, Any]) -> str:
    pairings = [p for p in d["pairings"] if d.get("anchor") in (p["name_a"], p["name_b"])]
    return "; ".join(score(p) for p in pairings)


def pons_headline(d: dict[str, Any]) -> str:
    rates = [f"{r['spec']} {100 * s['error_rate']:.1f}%" for r in d["results"] for s in r["sets"]
             if s["set"] == "begin_hard"]
    return "begin_hard errors: " + ", ".join(rates) if rates else ""


def values_headline(d: dict[str, Any]) -> str:
    aucs = [f"{r['model']} {s['net']['win_loss_auc']:.3f}" for r in d["results"] for s in r["sets"]
            if s["set"] == "begin_hard"]
    return "begin_hard win-loss AUC of the network's value: " + ", ".join(aucs) if aucs else ""


def sai_headline(d: dict[str, Any]) -> str:
    return (f"final empty-board estimate of Black's board lead {d['final_empty_board_black_lead']:+.2f} "
            f"(perfect play {d['perfect_play_black_lead']:+.0f}), {d['games']} games")


def komi_curve_headline(d: dict[str, Any]) -> str:
    fit, net = d["selfplay_fit"], d["net"]
    return (f"self-play score crosses 1/2 at komi {fit['black_lead']:+.1f} [{fit['black_lead_low']:.1f}, "
            f"{fit['black_lead_high']:.1f}]; the network's empty-board estimate {net['empty_board_black_lead']:+.2f}")


def bench_headline(d: dict[str, Any]) -> str:
    rows = [r for r in d["results"] if "sims_per_s" in r]
    return "; ".join(f"{r['game']} {r['sims_per_s']:.1f} simulations/s ({r['ratio_vs_net_only']} of the "
                     f"network-only rate)" for r in rows)


def plan_headline(d: dict[str, Any]) -> str:
    return f"{d['bytes_per_device'] / 2**30:.1f} GiB per device on {d['num_devices']} device(s)"


def eval_cache_headline(d: dict[str, Any]) -> str:
    rows = [r for r in d["rows"] if r["tree_reuse"]]
    return "exact-input hit rate with tree reuse: " + ", ".join(
        f"{r['game']} ({Path(r['network']).name}) {100 * r['exact']['hit_rate']:.2f}%" for r in rows)


def tree_reuse_headline(d: dict[str, Any]) -> str:
    on, off = d["reuse_on"], d["reuse_off"]
    low, high = d["score_interval"]
    elo_low, elo_high = d["elo_diff_interval"]
    return (f"reuse on vs off at {d['seconds_per_move']:g} s/move: {d['score']:.3f} [{low:.3f}, {high:.3f}] "
            f"(+{d['wins']} ={d['draws']} -{d['losses']}), Elo {d['elo_diff']:+.0f} [{elo_low:+.0f}, {elo_high:+.0f}]; "
            f"visits/move {on['mean_visits']:g} (on, {on['mean_kept_visits']:g} kept) and {off['mean_visits']:g} (off)")


def engine_clock_headline(d: dict[str, Any]) -> str:
    uci, gtp = d["uci"], d["gtp"]
    controls = uci["controls"] + gtp["controls"]
    lost = [c["control"] for c in controls if c["lost_on_time"]]
    return (f"start-up {uci['startup_seconds']:g} s (UCI, to readyok) and {gtp['startup_seconds']:g} s (GTP), "
            f"{uci['compiles_after_readyok'] + gtp['compiles_after_first_answer']} compiles after; at most "
            f"{max(c['max_share'] for c in controls):.2f} of a move's available time used, "
            f"{'lost on time under ' + ', '.join(lost) if lost else 'no clock ran out'}")


def xla_flags_headline(d: dict[str, Any]) -> str:
    """Each flag set against the first: in CPU seconds where the file has them (robust to a shared machine's load)."""
    def against_first(ratio: dict[str, float]) -> str:
        if "first_step_cpu_s" in ratio:
            return (f"first step (the compile) x{ratio['first_step_cpu_s']}, later steps x{ratio['step_cpu_s']} "
                    "in CPU seconds")
        return f"XLA compile x{ratio['xla_compile_s']}, step x{ratio['step_s']} in wall seconds"
    base = d["flag_sets"][0]["flags"] or "XLA's defaults"
    return "; ".join(f"{row['flags'] or 'defaults'} against {base}: {against_first(row['ratio_to_first'])}"
                     for row in d["flag_sets"][1:])


def variants_headline(d: dict[str, Any]) -> str:
    return "area under the error curve: " + ", ".join(f"{name} {100 * row['auc_mean']:.1f}%"
                                                      for name, row in d["table"].items())


# (the keys a file must have, its headline): the first match gives the headline.
HEADLINES: list[tuple[tuple[str, ...], Callable[[dict[str, Any]], str]]] = [
    (("pairings", "anchor"), arena_headline),
    (("name_a", "name_b", "score", "score_low"), score),
    (("result", "opponent"), lambda d: score(d["result"])),
    (("grading", "results", "devices"), pons_headline),
    (("results", "notes", "args"), values_headline),
    (("final_empty_board_black_lead",), sai_headline),
    (("selfplay_fit", "net"), komi_curve_headline),
    (("results", "sims_per_s"), bench_headline),
    (("table", "variants"), variants_headline),
    (("flag_sets", "runs", "overrides"), xla_flags_headline),
    (("bytes_per_device", "num_devices"), plan_headline),
    (("rows", "search", "command"), eval_cache_headline),
    (("seconds_per_move", "reuse_on", "reuse_off"), tree_reuse_headline),
    (("uci", "gtp", "compile_cache"), engine_clock_headline),
    (("tier", "summary", "wall_seconds"), lambda d: f"{d['summary']}, {d['wall_seconds']:.0f} s wall on "
                                                     f"{d['cpu_cores']} cores"),
]


def headline(d: dict[str, Any]) -> str:
    for keys, make in HEADLINES:
        if all(k in d for k in keys):
            try:
                return make(d)
            except (KeyError, TypeError, ValueError):  # a file of another shape: no headline rather than a wrong one
                return ""
    return ""


def code(text: str) -> str:
    """`text` as Markdown inline code, on one line."""
    text = " ".join(text.split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def entry(path: Path) -> str:
    """One file's bullet: link, what it measures, headline, command."""
    d = json.loads(path.read_text())
    rel = path.relative_to(RESULTS).as_posix()
    command = d.get("command") if isinstance(d, dict) and isinstance(d.get("command"), str) else None
    measures = MEASURES.get(program(command) or "") if command else None
    if measures is None:
        keys = ", ".join(d) if isinstance(d, dict) else f"a list of {len(d)} items"
        measures = f"keys: {keys}"
    lines = [f"- [{path.name}]({rel}): {measures}."]
    if isinstance(d, dict) and (figure := headline(d)):
        lines.append(f"  - {figure}")
    if command:
        lines.append(f"  - {code(command)}")
    return "\n".join(lines)


def render(files: list[Path]) -> str:
    """The whole of results/README.md."""
    out = ["# Results", "",
           "Committed outputs of azjax's commands and scripts. This page is generated by "
           "`python -m scripts.results_index` from the JSON files themselves (run and model `config.json` files "
           "are left out); `python -m scripts.results_index --check` fails when it is out of date. Each entry: "
           "what the file measures, a headline figure where there is an obvious one, and the command that wrote "
           "it when the file records one. The figures are discussed in [docs/experiments.md]"
           "(../docs/experiments.md). Files are grouped by study (a game's runs, `sai_7x7/`, `contempt/`, `speed/`, "
           "...); a command recorded before its file moved names the old path, and [path_map.json](path_map.json) "
           "maps it to the new one.", ""]
    folder = None
    for path in files:
        here = path.parent.relative_to(ROOT).as_posix()
        if here != folder:
            folder = here
            out += [f"## {folder}/", ""]
        out += [entry(path), ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- README.md's headline table

# Each row: game, training (what and how long, with its links), opponent, and the cells of its score column: a
# results file and what to read from it, the name of the opponent in a match result or "begin_hard" for the error
# rate on that Pons set. The scores themselves are read from the files.
HEADLINE_ROWS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("Connect Four",
     "`hour` preset: 1400 steps in [53m13s](results/connect_four/connect_four_hour/colour_plane/train_log.txt), "
     "2 CPU cores split into 2 devices",
     "OpenSpiel's MCTS-Solver, 1000 simulations (40 games, the network searching 256 visits)",
     [("results/connect_four/connect_four_hour/colour_plane/vs_mcts_solver1000.json", "mcts-solver1000")]),
    ("Connect Four", "the same network",
     "Pons' begin_hard set: moves that change the game-theoretic result, at 256 visits",
     [("results/connect_four/connect_four_hour/colour_plane/pons_sims256.json", "begin_hard")]),
    ("Connect Four",
     "`quick` preset: 300 steps in [18m37s](results/connect_four/connect_four_quick/train_log.txt), 2 CPU cores",
     "rollout MCTS, 200 simulations (200 games, the network searching 256 simulations)",
     [("results/connect_four/connect_four_quick/eval_vs_mcts200_sims256.json", "mcts200")]),
    ("Go 7x7",
     "`sai` preset with KataGo's global pooling, ownership and score heads: 2203 steps in "
     "[55 minutes](results/go_7x7/sai_pooled_katago_aux/train_log.txt), 2 CPU cores",
     "GNU Go level 10 at komi 9.5, then at komi 7.5 (40 games each, 2048 simulations, SAI's sensible agent at "
     "lambda 0.5; `results/models/go_7x7_pooled`)",
     [("results/arena/go_7x7/results.json", "gnugo-l10"), ("results/arena/go_7x7/komi_7.5/results.json", "gnugo-l10")]),
    ("Go 9x9",
     "the 7x7 network above (55 minutes) continued on 9x9: 1536 steps in "
     "[65 minutes](results/go_9x9/sai_pooled_from_7x7/train_log.txt), 2 CPU cores "
     "(shared with tests for about 30 of them)",
     "GNU Go level 1 / level 10 (komi 7.5, 40 games each, 512 simulations, SAI's sensible agent at lambda 0.5)",
     [("results/arena/go_9x9/results.json", "gnugo-l1"), ("results/arena/go_9x9/results.json", "gnugo-l10")]),
    ("Chess",
     "`hour` preset (Lc0's win/draw/loss head, random openings, AlphaZero's conv policy head, adjudicated leads at "
     "half a win, a fifth of the games at odds): 850 steps in [100](results/chess_hour/odds_starts/train_log.txt) "
     "+ [31 minutes](results/chess_hour/odds_starts_resumed/train_log.txt), 2 CPU cores",
     "one-ply material player / random play (40 games each, 64 simulations with a 64-move Gumbel root at c_scale 1, "
     "chess's own rules)",
     [("results/arena/chess/results.json", "material"), ("results/arena/chess/results.json", "random")]),
]


def match_result(d: dict[str, Any], opponent: str) -> dict[str, Any]:
    """The match result against `opponent` in a file of `azjax eval`, `azjax arena` or a script's match."""
    candidates = [d, d.get("result") or {}, *d.get("pairings", [])]
    for m in candidates:
        if m.get("name_b") == opponent or m.get("name_a") == opponent:
            if m.get("name_a") == opponent:  # the opponent listed first: the score from the other side
                return {**m, "score": 1 - m["score"], "score_low": 1 - m["score_high"],
                        "score_high": 1 - m["score_low"], "wins": m["losses"], "losses": m["wins"]}
            return m
    raise KeyError(f"no match against {opponent!r}")


def table_cell(path: str, what: str) -> str:
    d = json.loads((ROOT / path).read_text())
    if what == "begin_hard":
        sets = [s for r in d["results"] for s in r["sets"] if s["set"] == what]
        return f"[{100 * sets[0]['error_rate']:.1f}%]({path}) of {sets[0]['positions']} positions"
    m = match_result(d, what)
    return f"[{m['score']:.3f} [{m['score_low']:.3f}, {m['score_high']:.3f}]]({path})"


def headline_table() -> str:
    """README.md's table of strength against outside programs, its scores read from the results files."""
    rows = ["| game | training | opponent | score |", "| --- | --- | --- | --- |"]
    for game, training, opponent, cells in HEADLINE_ROWS:
        rows.append(f"| {game} | {training} | {opponent} | {' / '.join(table_cell(*c) for c in cells)} |")
    return "\n".join(rows)


def _ratio(x: float | None) -> str:
    return "not run" if x is None else f"{x:.2f}"


def _while_loop_graphs(bench: dict[str, Any]) -> bool | None:
    """Whether a bench ran with azjax's CUDA graphs for while loops (azjax.hosts), False without; None: other flags."""
    flags = bench.get("machine", {}).get("xla_flags", "").split()
    if not flags:
        return False
    return True if flags == [f"{GPU_COMMAND_BUFFER_FLAG}={GPU_COMMAND_BUFFER_TYPES}"] else None


def gpu_table() -> str:
    """README.md's table of self-play speed on lent GPUs: every `results/gpu/<device>/bench_full_*.json` row, and
    the headlines a loan printed for games whose bench file was cut short (its `loan_*.json`), with and without
    CUDA graphs for the while loops; runs with other XLA flags are left out."""
    rows = ["| device | game, `full` preset | while loops in CUDA graphs | self-play simulations/s "
            "| of the network-only ceiling | of a plain mctx loop |", "| --- | --- | --- | --- | --- | --- |"]
    for device in sorted(p for p in (RESULTS / "gpu").glob("*") if p.is_dir()):
        found: dict[tuple[str, bool], tuple[dict[str, Any], str]] = {}
        for path in sorted(device.glob("bench_full*.json")):
            bench = json.loads(path.read_text())
            graphs = _while_loop_graphs(bench)
            if graphs is None:  # an experiment with other XLA flags
                continue
            for r in bench["results"]:
                found[r["game"], graphs] = (r, str(path.relative_to(ROOT)))
        for path in sorted(device.glob("loan_*.json")):
            for call in json.loads(path.read_text())["calls"]:
                for r in call.get("bench_headlines", []):
                    found.setdefault((r["game"], False), (r, str(path.relative_to(ROOT))))
        for (game, graphs), (r, path) in sorted(found.items()):
            rows.append(f"| {device.name.replace('_', ' ')} | {game} | {'yes' if graphs else 'no'} "
                        f"| [{r['sims_per_s']:,.0f}]({path}) "
                        f"| {r['ratio_vs_net_only']:.2f} | {_ratio(r['ratio_vs_plain_loop'])} |")
    return "\n".join(rows)


def _minutes(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def test_times() -> str:
    """README.md's sentence on how long the fast tier and the whole suite took, from scripts/time_tests.py's files."""
    fast, full = (json.loads((RESULTS / "speed" / f"test_times_{tier}.json").read_text()) for tier in ("fast", "full"))
    return (f"It took {_minutes(fast['wall_seconds'])} on {fast['cpu_cores']} cores at {fast['commit']} "
            f"([results/speed/test_times_fast.json](results/speed/test_times_fast.json)); the whole suite took "
            f"{_minutes(full['wall_seconds'])} at {full['commit']} "
            f"([results/speed/test_times_full.json](results/speed/test_times_full.json)).")


def readme_with_table(text: str) -> str:
    """README.md's text with the parts between its table markers rewritten."""
    for begin, finish, table in ((TABLE_START, TABLE_END, headline_table), (GPU_TABLE_START, GPU_TABLE_END, gpu_table),
                                 (TEST_TIMES_START, TEST_TIMES_END, test_times)):
        start, end = text.index(begin) + len(begin), text.index(finish)
        text = text[:start] + "\n" + table() + "\n" + text[end:]
    return text


# ---------------------------------------------------------------- the path map

# A script named by its path, or by its module after `-m` (a command run from the repository root). Names are lower
# case, so that placeholders (`lab/STUDY/NAME.py`, `python -m scripts.NAME`) name nothing.
SCRIPT_PATH = re.compile(r"(?<![\w./-])((?:scripts|lab)/[a-z0-9_./-]*[a-z0-9_]\.(?:py|sh))(?![\w/])")
SCRIPT_MODULE = re.compile(r"(?<![\w-])-m ((?:scripts|lab)(?:\.[a-z0-9_]+)+)(?![\w.])")
# What can name a script: the docs and results/'s text files (not game records, plots or parameters).
TEXT_SUFFIXES = (".json", ".jsonl", ".txt", ".md", ".csv", ".log")


def load_path_map(root: Path = ROOT) -> dict[str, str]:
    """results/path_map.json's moves: old path -> new path, both relative to the repository root."""
    return json.loads((root / PATH_MAP.relative_to(ROOT)).read_text())["moves"]


def moved_to(path: str, moves: dict[str, str]) -> str | None:
    """Where `path` (relative to the repository root) moved through the map: its own entry, else the entry of the
    nearest folder above it (`results/connect_four_hour/x.json` -> `results/connect_four/connect_four_hour/x.json`);
    None when nothing moved it."""
    path = path.rstrip("/")
    if path in moves:
        return moves[path]
    folder = max((old for old in moves if path.startswith(old + "/")), key=len, default=None)
    return None if folder is None else moves[folder] + path[len(folder):]


def named_scripts(text: str) -> set[str]:
    """The scripts a text names, as paths: `lab/x/y.py` as it is, `python -m lab.x.y` as lab/x/y.py."""
    return set(SCRIPT_PATH.findall(text)) | {m.replace(".", "/") + ".py" for m in SCRIPT_MODULE.findall(text)}


def path_map_problems(root: Path = ROOT) -> list[str]:
    """What is wrong with the path map of the repository at `root`: an old path still there, a new path missing, a
    script named in results/ or the docs (README.md, docs/, scripts/README.md, lab/README.md) that is not there and
    that the map does not move."""
    moves = load_path_map(root)
    files = {f.relative_to(root).as_posix() for f in repository_files(root)}
    there = files | {parent.as_posix() for f in files for parent in Path(f).parents}  # a folder: a file under it
    where = PATH_MAP.relative_to(ROOT).as_posix()
    problems = [f"{where}: {old} is still in the repository" for old in moves if old in there]
    problems += [f"{where}: {new} (moved from {old}) is not in the repository" for old, new in moves.items()
                 if new not in there]
    pages = sorted(f for f in files if f.endswith(TEXT_SUFFIXES) and f != where and (
        f.startswith(("results/", "docs/")) or f in ("README.md", "scripts/README.md", "lab/README.md")))
    for page in pages:
        for script in sorted(named_scripts((root / page).read_text(errors="replace"))):
            if script not in files and moved_to(script, moves) not in files:
                problems.append(f"{page} names {script}: not in the repository, and {where} does not move it")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when results/README.md is out of date")
    args = parser.parse_args(argv)
    written = {INDEX: render(result_files()), README: readme_with_table(README.read_text())}
    status = write_or_check(written, args.check, "python -m scripts.results_index")
    problems = path_map_problems()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else status


def write_or_check(written: dict[Path, str], check: bool, command: str) -> int:
    """Writes each file's generated text; with `check`, writes nothing and returns 1 (naming `command` to run) when a
    file differs from its text. Shared by the scripts that generate committed files."""
    if check:
        stale = [path for path, text in written.items() if not path.exists() or path.read_text() != text]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run {command}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in written.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
