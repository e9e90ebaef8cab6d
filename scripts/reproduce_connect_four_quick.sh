#!/usr/bin/env bash
# Trains Connect Four with the `quick` preset, evaluates the final network (+ its Gumbel search at 64
# and 256 simulations) over 200 games against rollout MCTS with 200 simulations, and refreshes:
#   results/connect_four/connect_four_quick/{config.json,metrics.csv,eval.csv,curves.png,train_log.txt}
#   results/connect_four/connect_four_quick/eval_vs_mcts200_sims{64,256}.json
#   results/connect_four/connect_four_quick/checkpoint_step200/   (the mid-run parameters, for the arena table)
#   results/models/connect_four_quick/{config.json,params.msgpack}
# The committed run mixed the root's mean value into its value targets (it predates value_target_q; see
# azjax/config.py), so this script trains with `--value_target_q root`; the preset's default is now "policy".
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/connect_four_quick_$(date +%Y%m%d_%H%M%S)}
OUT=results/connect_four/connect_four_quick
mkdir -p "$OUT"
( time azjax train --game connect_four --preset quick --value_target_q root --run_dir "$RUN" --no-progress ) 2>&1 | tee "$OUT/train_log.txt"
rm -rf results/models/connect_four_quick "$OUT/checkpoint_step200"
azjax export "$RUN" results/models/connect_four_quick
azjax export "$RUN" "$OUT/checkpoint_step200" --step 200
for sims in 64 256; do
  azjax eval results/models/connect_four_quick mcts:200 --games 200 --simulations "$sims" \
    --out "$OUT/eval_vs_mcts200_sims$sims.json"
done
cp "$RUN"/{curves.png,metrics.csv,eval.csv,config.json} "$OUT/"
exit
}
