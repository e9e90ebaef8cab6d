#!/usr/bin/env bash
# Trains Connect Four with the `quick` preset, evaluates the final network (+ its search) over 200
# games against rollout MCTS with 200 simulations, and commits-ready copies the outputs:
#   results/connect_four_quick/{curves.png,metrics.csv,eval.csv,config.json,train_log.txt,eval_vs_mcts200.json}
#   results/models/connect_four_quick/{config.json,params.msgpack}
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/connect_four_quick_$(date +%Y%m%d_%H%M%S)}
OUT=results/connect_four_quick
mkdir -p "$OUT"
start=$(date +%s)
azjax train --game connect_four --preset quick --run_dir "$RUN" --no-progress 2>&1 | tee "$OUT/train_log.txt"
echo "training wall time: $(( $(date +%s) - start )) s" | tee -a "$OUT/train_log.txt"
azjax export "$RUN" results/models/connect_four_quick
azjax eval results/models/connect_four_quick mcts:200 --games 200 --simulations "${SIMS:-64}" \
  --out "$OUT/eval_vs_mcts200.json" | tee "$OUT/eval_log.txt"
cp "$RUN"/{curves.png,metrics.csv,eval.csv,config.json} "$OUT/"
