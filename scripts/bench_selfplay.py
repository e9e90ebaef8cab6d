"""Self-play speed benchmark (see azjax/tools/bench.py); writes results/bench_selfplay.json.

    python scripts/bench_selfplay.py [--game connect_four --game go_9x9] [--num_envs 256]
"""

import sys

from azjax.tools.bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
