"""Self-play speed benchmark (see azjax/train/bench.py); writes results/speed/bench_selfplay.json (or `--out FILE`).

    python -m scripts.bench_selfplay [--game connect_four --game go_9x9] [--num_envs 256]
"""

import sys

from azjax.train.bench import main


def with_results_out(argv: list[str]) -> list[str]:
    """`argv` with `--out results/speed/bench_selfplay.json` unless it names an --out: the bench's own default is
    under the ignored runs/, and this script rewrites the committed measurement."""
    if any(a == "--out" or a.startswith("--out=") for a in argv):
        return argv
    return [*argv, "--out", "results/speed/bench_selfplay.json"]


if __name__ == "__main__":
    sys.exit(main(with_results_out(sys.argv[1:])))
