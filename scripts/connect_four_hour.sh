#!/usr/bin/env bash
# Connect Four from scratch in an hour on a CPU: trains the `hour` preset for at most 59 minutes, with the
# CPU split into two JAX devices (AZJAX_CPU_DEVICES, azjax.hosts.split_host_cpu), one per core; then grades
# the final network on Pascal Pons' six test sets (64 visits, and its policy alone; the three opening sets
# at 256 visits too) and plays OpenSpiel's MCTS-Solver at 1000 simulations (40 games, 256 visits). Writes:
#   $OUT/{config.json,metrics.csv,eval.csv,curves.png,train_log.txt}, $OUT/model/ (the exported network)
#   $OUT/pons_sims{64,256}.json, pons_policy.json (no search), vs_mcts_solver1000.json
#   results/models/connect_four_hour/ (a copy of $OUT/model)
# OUT defaults to results/connect_four/connect_four_hour/colour_plane, where the committed run is. Arguments are passed on
# to `azjax train` (a variant of the preset: `OUT=... MODEL= bash scripts/connect_four_hour.sh --swa_decay 0.99`);
# MODEL= (empty) leaves results/models alone. The command run is written to $OUT/command.txt.
# Needs open-spiel (pip install open-spiel), a script-only dependency.
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/connect_four_hour_$(date +%Y%m%d_%H%M%S)}
OUT=${OUT:-results/connect_four/connect_four_hour/colour_plane}
MODEL=${MODEL-results/models/connect_four_hour}
mkdir -p "$OUT"
echo "RUN=$RUN OUT=$OUT MODEL=$MODEL bash scripts/connect_four_hour.sh $*" > "$OUT/command.txt"
( time env AZJAX_CPU_DEVICES="${AZJAX_CPU_DEVICES:-2}" azjax train --game connect_four --preset hour --minutes 59 \
    --run_dir "$RUN" --no-progress "$@" ) 2>&1 | tee "$OUT/train_log.txt"
rm -rf "$OUT/model"
AZJAX_CPU_DEVICES="${AZJAX_CPU_DEVICES:-2}" azjax export "$RUN" "$OUT/model"
cp "$RUN"/{curves.png,metrics.csv,eval.csv,config.json} "$OUT/"
python -m lab.connect_four.pons_benchmark "policy:$OUT/model" --out "$OUT/pons_policy.json"
python -m lab.connect_four.pons_benchmark "$OUT/model:64" --out "$OUT/pons_sims64.json"
python -m lab.connect_four.pons_benchmark "$OUT/model:256" --sets begin_easy begin_medium begin_hard --out "$OUT/pons_sims256.json"
python -m lab.connect_four.vs_mcts_solver "$OUT/model:256" --simulations 1000 --games 40 --out "$OUT/vs_mcts_solver1000.json"
if [[ -n "$MODEL" ]]; then
  mkdir -p "$MODEL"
  cp "$OUT"/model/* "$MODEL"/  # the folder's README.md stays
fi
exit
}
