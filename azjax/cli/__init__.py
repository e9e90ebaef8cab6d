"""The `azjax` command line: train, eval, play, bench, export, plan, sweep, gtp, uci, analyze, arena.

    azjax train --game connect_four --preset quick [--num_simulations 32 ...] [--run_dir DIR]
    azjax eval results/models/connect_four_quick mcts:200 --games 200
    python -m azjax.cli ...                     # the same

The modules: `main.py` (the commands, `build_parser` and `main`), `args.py` (argparse pieces: the number types
and the config fields as flags), `arena.py` and `analyze.py` (those two commands).
"""

from azjax.cli.main import build_parser, compile_cache_dir, enable_compilation_cache, main

__all__ = ["build_parser", "compile_cache_dir", "enable_compilation_cache", "main"]
