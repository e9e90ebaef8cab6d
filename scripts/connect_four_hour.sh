#!/usr/bin/env bash
# Connect Four from scratch in an hour on a CPU: trains the `hour` preset, then grades the final
# network on all six of Pascal Pons' test sets (64 and 256 visits, and its policy alone) and plays
# OpenSpiel's MCTS-Solver at 1000 simulations (40 games, 256 visits). Writes:
#   results/connect_four_hour/{config.json,metrics.csv,eval.csv,curves.png,train_log.txt}
#   results/connect_four_hour/pons_sims{64,256}.json, pons_policy.json (no search), vs_mcts_solver1000.json
#   results/models/connect_four_hour/{config.json,params.msgpack}
# Training splits the CPU into two JAX devices (AZJAX_CPU_DEVICES, azjax.hosts.split_host_cpu), one per core.
# Needs open-spiel (pip install open-spiel), a script-only dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/connect_four_hour_$(date +%Y%m%d_%H%M%S)}
OUT=results/connect_four_hour
MODEL=results/models/connect_four_hour
mkdir -p "$OUT"
( time env AZJAX_CPU_DEVICES="${AZJAX_CPU_DEVICES:-2}" azjax train --game connect_four --preset hour --run_dir "$RUN" --no-progress ) 2>&1 | tee "$OUT/train_log.txt"
rm -rf "$MODEL"
azjax export "$RUN" "$MODEL"
cp "$RUN"/{curves.png,metrics.csv,eval.csv,config.json} "$OUT/"
for sims in 64 256; do
  python scripts/pons_benchmark.py "$MODEL:$sims" --out "$OUT/pons_sims$sims.json"
done
python scripts/pons_benchmark.py "policy:$MODEL" --out "$OUT/pons_policy.json"
python scripts/vs_mcts_solver.py "$MODEL:256" --simulations 1000 --games 40 --out "$OUT/vs_mcts_solver1000.json"
