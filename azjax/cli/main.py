"""The `azjax` command line: its commands, the parser and `main`.

    azjax train --game connect_four --preset quick [--num_simulations 32 ...] [--run_dir DIR]
    azjax train --game go_7x7 --preset sai      # SAI sigmoid-komi values (or --value_head sai on any Go preset)
    azjax train --resume RUN_DIR
    azjax eval results/models/connect_four_quick mcts:200 --games 200
    azjax play results/models/connect_four_quick
    azjax bench --game connect_four
    azjax export RUN_DIR results/models/NAME
    azjax plan --game go_9x9 --preset full      # memory per device and the devices it fits, before compiling

Agents (for `eval`) are written `random`, `mcts:N` (rollout MCTS, N simulations), `policy:PATH`
(the raw policy, no search) or `PATH[:N]` (a run directory or exported model searching N
simulations; default `--simulations`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import Any

from azjax.cli.args import (
    PRESET_HELP,
    Parser,
    any_int,
    configured,
    even_games,
    nonnegative_int,
    positive_float,
    positive_int,
    replay_ratio_flag,
    unit_float,
)
from azjax.compile_cache import enable_compilation_cache
from azjax.hosts import gpu_while_loop_graphs, init_distributed, split_host_cpu


def start_devices() -> None:
    """Splits the CPU into `AZJAX_CPU_DEVICES` JAX devices, puts a CUDA GPU's while loops in CUDA graphs
    (`AZJAX_GPU_GRAPHS=0` to keep them out) and starts the many-host runtime (`AZJAX_DISTRIBUTED=1`).

    Both must happen before anything starts JAX's backend (importing pgx does: `azjax.config` imports the games), so
    `main` calls this first and this module imports the config and the commands' machinery only inside functions:
    importing `azjax.cli` changes nothing. Exits (status 1) on a bad `AZJAX_CPU_DEVICES`."""
    try:
        split_host_cpu()  # AZJAX_CPU_DEVICES=N|auto
    except ValueError as e:
        sys.exit(f"azjax: error: {e}")
    gpu_while_loop_graphs()
    init_distributed()  # AZJAX_DISTRIBUTED=1


# ---------------------------------------------------------------- train


def cmd_train(args: argparse.Namespace) -> int:
    from azjax.config import config_overrides
    from azjax.train import train

    fields = config_overrides(args)
    budget = None if args.minutes is None else 60.0 * args.minutes
    if args.resume:
        from azjax.checkpoint import check_resumable, load_config

        given = [flag for flag, v in (("--game", args.game), ("--preset", args.preset), ("--run_dir", args.run_dir),
                                      ("--replay_ratio", args.replay_ratio)) if v is not None]
        if given:
            raise ValueError(f"--resume continues the run as it was started: give no {', '.join(given)}")
        check_resumable(args.resume)
        config = None
        if fields:
            config = load_config(args.resume).replace(**fields)
        summary = train(config, args.resume, resume=True, progress=not args.no_progress, stop_after=args.stop_after,
                        time_budget_s=budget)
    else:
        game = "connect_four" if args.game is None else args.game
        name = "quick" if args.preset is None else args.preset
        config = configured(args, game, name)
        run_dir = args.run_dir or f"runs/{game}_{name}_{time.strftime('%Y%m%d_%H%M%S')}"
        summary = train(config, run_dir, progress=not args.no_progress, stop_after=args.stop_after,
                        time_budget_s=budget)
    last = summary.get("last_eval")
    print(f"run directory: {summary['run_dir']} (step {summary['step']})")
    if last:
        print(f"last evaluation: score {float(last['score']):.3f} vs {last['opponent']}")
    # Stopped by a signal (checkpoint written): the shell's 128 + signal, 130 for Ctrl-C and 143 for SIGTERM, so
    # `azjax train ... && azjax export ...` does not go on with an unfinished run.
    return 0 if summary.get("signal") is None else 128 + int(summary["signal"])


def cmd_sweep(args: argparse.Namespace) -> int:
    from azjax.config import config_overrides
    from azjax.train.sweep import grid_runs, parse_grid, run_sweep

    if args.resume:
        if config_overrides(args) or args.grid or args.seeds is not None or args.replay_ratio is not None:
            raise ValueError("--resume continues a sweep as it was started: give no --grid, --seeds or fields")
        summary = run_sweep(None, args.resume, resume=True, progress=not args.no_progress)
    else:
        from azjax.checkpoint import refuse_model_dir

        grid = parse_grid(args.grid or [])
        base = configured(args, args.game, args.preset)
        runs = grid_runs(base, grid, args.seeds if args.seeds is not None else 1)
        sweep_dir = args.run_dir or f"runs/sweep_{args.game}_{args.preset}_{time.strftime('%Y%m%d_%H%M%S')}"
        refuse_model_dir(sweep_dir, f"the sweep directory {sweep_dir}")
        summary = run_sweep(runs, sweep_dir, grid=grid, progress=not args.no_progress)
    print(f"sweep directory: {summary['sweep_dir']} ({'finished' if summary['finished'] else 'stopped'})")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    import jax

    from azjax.checkpoint import refuse_model_dir, write_json
    from azjax.train.plan import check_fits, device_memory, plan, render

    config = configured(args, args.game, args.preset)
    if args.out:
        refuse_model_dir(args.out, f"--out {args.out}")
    devices = args.devices or jax.device_count()
    p = plan(config, num_devices=devices, compile_step=args.compile)
    here = jax.devices()[0]
    memory = device_memory(here)
    print(render(p, this_machine=(f"this machine ({here.device_kind})", memory)))
    if args.out:
        write_json(args.out, {**p.to_dict(), "config": config.to_dict(), "this_machine_bytes": memory,
                              "command": "azjax " + " ".join(sys.argv[1:])})
        print(f"wrote {args.out}")
    if devices == jax.device_count():
        check_fits(p, memory, what=f"{args.game} {args.preset} on this machine")
    return 0


# ---------------------------------------------------------------- agents


def jax_agent(spec: str, game_name: str | None, simulations: int | None, search: str | None = None,
              n_scl: int | None = None) -> tuple[Any, str]:
    """An agent of `azjax eval` from its spec (`azjax.play.specs`: JAX players only); returns (agent, game name)."""
    from azjax.play.specs import parse_agent

    player, game = parse_agent(spec, game_name, simulations, search=search, n_scl=n_scl)
    if player.external or player.agent is None:
        raise ValueError(f"agent {spec!r} is an external program: `azjax arena` plays those")
    assert game is not None
    return dataclasses.replace(player.agent, name=player.name), game


# ---------------------------------------------------------------- eval


def cmd_eval(args: argparse.Namespace) -> int:
    import jax

    from azjax.play.arena import match
    from azjax.play.specs import spec_game

    if args.out:
        from azjax.checkpoint import refuse_model_dir

        refuse_model_dir(args.out, f"--out {args.out}")
    game_name = args.game or spec_game(args.agent_a) or spec_game(args.agent_b)
    a, game_name = jax_agent(args.agent_a, game_name, args.simulations, args.search, args.n_scl)
    b, _ = jax_agent(args.agent_b, game_name, args.simulations, args.search, args.n_scl)
    from azjax.build import game_named

    game = game_named(game_name)
    t0 = time.perf_counter()
    result = match(game, a, b, args.games, jax.random.key(args.seed), batch_size=args.batch_size)
    d = result.to_dict()
    d.update(agent_a=a.name, agent_b=b.name, game=game_name, seconds=round(time.perf_counter() - t0, 1),
             command="azjax " + " ".join(sys.argv[1:]))
    print(f"{a.name} vs {b.name} on {game_name}: {d['wins']} wins, {d['draws']} draws, {d['losses']} losses "
          f"over {d['games']} games")
    print(f"score {d['score']:.3f} (95% CI {d['score_low']:.3f}-{d['score_high']:.3f}), "
          f"Elo difference {d['elo']:+.0f} [{d['elo_low']:+.0f}, {d['elo_high']:+.0f}]")
    if args.out:
        from azjax.checkpoint import write_json

        write_json(args.out, d)
        print(f"wrote {args.out}")
    return 0


# ---------------------------------------------------------------- play


def cmd_play(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from azjax.build import load_model, play_game
    from azjax.play.agents import network_agent

    config, params = load_model(args.checkpoint)
    if args.n_scl is not None:  # an override of the checkpoint's n_scl (0: off)
        config = config.replace(n_scl=args.n_scl)
    game = play_game(config)
    agent = network_agent(config, game, params, num_simulations=args.simulations)
    act = jax.jit(agent.act)
    human = 0 if args.color == "first" else 1
    key = jax.random.key(args.seed)
    state = game.init(jax.random.key(0))
    batch = lambda s: jax.tree.map(lambda x: x[None], s)  # noqa: E731
    step = jax.jit(game.step)
    mover = 0  # index in move order: 0 = first player
    print(f"You play {'first' if human == 0 else 'second'} against {args.checkpoint} "
          f"({args.simulations} simulations). Type a move, 'help' or 'quit'.")
    while not bool(state.terminated):
        print(game.render(state))
        if mover == human:
            text = input("your move> ").strip()
            if text in ("quit", "exit"):
                return 0
            if text == "help":
                legal = np.flatnonzero(np.asarray(state.legal_action_mask))
                print("legal moves:", " ".join(game.action_to_str(state, int(a)) for a in legal))
                continue
            try:
                action = game.parse_action(state, text)
            except ValueError as e:
                print(f"{e}; try again ('help' lists the legal moves)")
                continue
        else:
            key, sub = jax.random.split(key)
            action = int(act(agent.params, sub, batch(state))[0])
            print(f"azjax plays {game.action_to_str(state, action)}")
        prev = state.current_player
        state = step(state, action)
        if bool(state.terminated):
            print(game.render(state))
            r = float(state.rewards[prev])
            who = "you" if mover == human else "azjax"
            print("draw" if r == 0 else (f"{who} won" if r > 0 else f"{who} lost"))
        mover = 1 - mover
    return 0


# ---------------------------------------------------------------- bench, export


def bench_parser() -> Parser:
    """The bench's own flags (`azjax.train.bench.add_arguments`) under this CLI's rules: no abbreviations, one-line
    errors, and the numbers checked, so a bad flag is refused before the bench compiles anything."""
    from azjax.config import PRESETS
    from azjax.train.bench import add_arguments

    p = Parser(prog="azjax bench")
    add_arguments(p)
    p.add_argument("--no-compile-cache", action="store_true")
    for action in p._actions:  # argparse keeps the flags only in this list
        if action.dest in ("num_envs", "num_simulations", "rounds", "scaling_envs"):
            action.type = positive_int
        elif action.dest == "n_scl":
            action.type = nonnegative_int
        elif action.dest == "game":
            action.choices = list(PRESETS)
    return p


def check_bench_flags(flags: list[str]) -> None:
    from azjax.config import PRESETS

    p = bench_parser()
    args = p.parse_args(flags)
    if args.preset not in {name for g in (args.game or ["connect_four", "go_9x9"]) for name in PRESETS[g]}:
        p.error(f"argument --preset: unknown preset {args.preset!r}")
    try:
        visits = [int(v) for v in args.scaling.split(",") if v.strip()] if args.scaling else []
    except ValueError:
        p.error(f"argument --scaling: expects comma-separated visit counts, got {args.scaling!r}")
    if any(v < 1 for v in visits):
        p.error(f"argument --scaling: visit counts must be >= 1, got {args.scaling!r}")


def cmd_bench(args: argparse.Namespace) -> int:
    from azjax.train.bench import main as bench_main

    flags = args.argv[args.argv.index("bench") + 1:]
    return bench_main([a for a in flags if a != "--no-compile-cache"])


def cmd_export(args: argparse.Namespace) -> int:
    from azjax.checkpoint import export_model

    params = None
    if args.step is not None:
        from azjax.train import params_at_step

        params = params_at_step(args.run_dir, args.step)
    dest = export_model(args.run_dir, args.dest, params=params)
    print(f"exported {args.run_dir}{'' if args.step is None else f' (step {args.step})'} -> {dest}")
    return 0


# ---------------------------------------------------------------- engines: gtp, uci, analyze, arena


def cmd_gtp(args: argparse.Namespace) -> int:
    from azjax.engines.gtp import main as gtp_main

    return gtp_main(args)


def cmd_uci(args: argparse.Namespace) -> int:
    from azjax.engines.uci import main as uci_main

    return uci_main(args)


def cmd_analyze(args: argparse.Namespace) -> int:
    from azjax.cli.analyze import main as analyze_main

    return analyze_main(args)


def cmd_arena(args: argparse.Namespace) -> int:
    from azjax.cli.arena import main as arena_main

    return arena_main(args)


# ---------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    from azjax.config import PRESETS, config_flags

    parser = Parser(prog="azjax", description="AlphaZero in JAX (pgx + mctx)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a network by self-play",
                       epilog="On a CPU, AZJAX_CPU_DEVICES=N (or auto) splits it into N devices, one per core, so the "
                              "data-parallel loop uses N cores (scripts/connect_four_hour.sh: 2).")
    p.add_argument("--game", default=None, choices=list(PRESETS), help="default connect_four")
    p.add_argument("--preset", default=None, help=PRESET_HELP)
    p.add_argument("--run_dir", default=None, help="default: runs/GAME_PRESET_TIME")
    p.add_argument("--resume", default=None, metavar="RUN_DIR", help="continue a stopped run")
    p.add_argument("--no-progress", action="store_true", help="plain log lines instead of a progress bar")
    p.add_argument("--minutes", type=positive_float, default=None,
                   help="stop after this much training time, with a checkpoint (continue with --resume)")
    p.add_argument("--stop_after", type=positive_int, default=None, metavar="STEPS",
                   help="stop after this many more loop steps, with a checkpoint (continue with --resume); unlike "
                        "--num_steps it leaves the run's learning-rate schedule, and so its compiled program, as "
                        "they are")
    replay_ratio_flag(p)
    config_flags(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("sweep", help="many training runs (seeds x a grid of fields) as one jitted program")
    p.add_argument("--game", default="connect_four", choices=list(PRESETS))
    p.add_argument("--preset", default="quick")
    p.add_argument("--seeds", type=positive_int, default=None,
                   help="runs per grid point, seeds seed, seed+1, ... (default 1)")
    p.add_argument("--grid", action="append", default=None, metavar="FIELD=v1,v2,...",
                   help="repeatable: a config field and its values (the runs are the cartesian product)")
    p.add_argument("--run_dir", default=None, help="the sweep directory (default: runs/sweep_GAME_PRESET_TIME)")
    p.add_argument("--resume", default=None, metavar="SWEEP_DIR", help="continue a stopped sweep")
    p.add_argument("--no-progress", action="store_true", help="plain log lines instead of a progress bar")
    replay_ratio_flag(p)
    config_flags(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("plan", help="what a run holds per device and which devices it fits, before it compiles",
                       epilog="Exit status 2 when the run cannot fit this machine, naming the fields to lower.")
    p.add_argument("--game", default="connect_four", choices=list(PRESETS))
    p.add_argument("--preset", default="quick")
    p.add_argument("--devices", type=positive_int, default=None,
                   help="devices the run is split over (default: this machine's)")
    p.add_argument("--compile", action="store_true",
                   help="also compile the step here for XLA's memory analysis and the compile time (minutes on a CPU "
                        "for the full presets)")
    p.add_argument("--out", default=None, help="write the plan as JSON here")
    replay_ratio_flag(p)
    config_flags(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("eval", help="play games between two agents (colours alternate)")
    p.add_argument("agent_a")
    p.add_argument("agent_b")
    p.add_argument("--game", default=None, help="needed when neither agent is a checkpoint")
    p.add_argument("--games", type=even_games, default=200, help="games played (even: colours alternate)")
    p.add_argument("--simulations", type=positive_int, default=None,
                   help="search budget of checkpoint agents (default: each model's eval_simulations)")
    p.add_argument("--search", choices=["gumbel", "puct"], default=None, help="override the checkpoint's search")
    p.add_argument("--n_scl", type=nonnegative_int, default=None,
                   help="search-contempt node limit for checkpoint agents (0: off)")
    p.add_argument("--batch_size", type=positive_int, default=None, help="games played at once (default: all)")
    p.add_argument("--seed", type=any_int, default=0)
    p.add_argument("--out", default=None, help="write the result as JSON here")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("play", help="play against a checkpoint in the terminal")
    p.add_argument("checkpoint")
    p.add_argument("--simulations", type=positive_int, default=128)
    p.add_argument("--color", choices=["first", "second"], default="first")
    p.add_argument("--n_scl", type=nonnegative_int, default=None, help="search-contempt node limit (0: off)")
    p.add_argument("--seed", type=any_int, default=0)
    p.set_defaults(func=cmd_play)

    # The bench parses its own flags (`python -m azjax.train.bench --help`): the CLI hands them on unread.
    p = sub.add_parser("bench", add_help=False,
                       help="self-play speed against the network-only ceiling and a plain loop")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("export", help="copy a run's config and parameters into a model directory")
    p.add_argument("run_dir")
    p.add_argument("dest")
    p.add_argument("--step", type=positive_int, default=None,
                   help="export the parameters of this step's checkpoint (default: the latest parameters)")
    p.set_defaults(func=cmd_export)

    for name, help_ in (("gtp", "a GTP engine (Go, and every other game in its notation) on stdin/stdout"),
                        ("uci", "a UCI chess engine on stdin/stdout")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--checkpoint", required=True, help="run directory or exported model")
        p.add_argument("--visits", type=positive_int, default=None,
                       help="simulations per move (default: eval_simulations)")
        p.add_argument("--n_scl", type=nonnegative_int, default=None, help="search-contempt node limit (0: off)")
        p.add_argument("--search", choices=["gumbel", "puct"], default=None, help="override the checkpoint's search")
        p.add_argument("--seed", type=any_int, default=0)
        p.add_argument("--tree_reuse", action=argparse.BooleanOptionalAction, default=True,
                       help="continue the last search's tree under the moves played (default on; not with --n_scl)")
        p.add_argument("--move_overhead", type=nonnegative_int, default=None, metavar="MS",
                       help="milliseconds kept back from every move under a clock for the GUI and the engine's own "
                            "work around the search (default 200; UCI's MoveOverheadMs option too)")
        if name == "gtp":
            p.add_argument("--sensible_lambda", type=unit_float, default=None,
                           help="SAI networks: SAI's sensible agent, lambda in [0, 1] (0: the plain winrate; 0.5 "
                                "keeps playing for points when far behind or ahead; docs/methods.md section 2)")
            p.add_argument("--score_utility_factor", type=unit_float, default=None,
                           help="networks with a score head: KataGo's score utility, the weight in [0, 1] of a bonus "
                                "for the predicted score lead in the search (0.3: KataGo's; 0: off; docs/methods.md "
                                "section 15)")
        else:
            p.add_argument("--material_prior_weight", type=unit_float, default=None,
                           help="KnightCap's material start: the weight in [0, 1] of the material count in the "
                                "search's values (0: off; default the checkpoint's; docs/methods.md section 16)")
        p.set_defaults(func=cmd_gtp if name == "gtp" else cmd_uci)

    from azjax.cli.analyze import add_arguments as analyze_arguments
    from azjax.cli.arena import add_arguments as arena_arguments

    p = sub.add_parser("analyze", help="search positions; per-move statistics (batched with --positions)")
    analyze_arguments(p)
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("arena", help="round robin / gauntlet among checkpoints, baselines and GTP/UCI engines")
    arena_arguments(p)
    p.set_defaults(func=cmd_arena)
    for p in sub.choices.values():  # every command: `azjax COMMAND --no-compile-cache ...`
        p.add_argument("--no-compile-cache", action="store_true",
                       help="do not use JAX's persistent compilation cache (also: AZJAX_CACHE_DIR=off)")
    return parser


def main(argv: list[str] | None = None) -> int:
    start_devices()  # first: before anything starts JAX's backend
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args, unread = parser.parse_known_args(argv)
    if unread and args.command != "bench":
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(unread)}")
    args.argv = argv
    if args.command == "bench":  # the bench parses its own flags: check them as this parser checks the others
        flags = argv[argv.index("bench") + 1:]
        if "-h" not in flags and "--help" not in flags:
            check_bench_flags(flags)
    enable_compilation_cache(enabled=not args.no_compile_cache, announce=True)
    if os.environ.get("AZJAX_LOG_COMPILES", "0").lower() not in ("", "0", "off", "false"):
        from azjax.compile_log import log_compiles

        log_compiles()  # one line on stderr per compilation (what compiles when, e.g. after an engine's readyok)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError) as e:  # OSError: e.g. a directory where a file should be, no permission
        message = str(e).replace("\n", " ")  # one line
        print(f"azjax {args.command}: error: {message}", file=sys.stderr)
        return 2
    except FloatingPointError as e:  # train.NumericalFault: a NaN or inf stopped the run
        print(f"azjax {args.command}: stopped: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130
    except EOFError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
