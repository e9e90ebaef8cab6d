"""The `azjax` command line: train, eval, play, bench, export, plan, sweep, gtp, uci, analyze, arena.

    azjax train --game connect_four --preset quick [--num_simulations 32 ...] [--run_dir DIR]
    azjax eval results/models/connect_four_quick mcts:200 --games 200
    python -m azjax.cli ...                     # the same

The modules: `main.py` (the commands, `build_parser` and `main`), `args.py` (argparse pieces: the number types
and the config fields as flags), `arena.py` and `analyze.py` (those two commands). Importing the package changes
nothing: `main` splits the CPU into devices and starts the many-host runtime when a command runs. The compilation
cache helpers the scripts use are in `azjax.compile_cache`.
"""

from azjax.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
