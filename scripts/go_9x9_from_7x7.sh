#!/usr/bin/env bash
# 9x9 Go from scratch in two CPU hours, as results/models/go_9x9_sai was made: 55 minutes of 7x7 (SAI's
# sigmoid-komi values with KataGo's global pooling, ownership and score heads), then the same network continues
# on 9x9 for 65 minutes (the go_9x9 `sai` preset with `--init_from`: every layer carries over), then the arena
# against GNU Go 3.8 at levels 1 and 10 (komi 7.5, 40 games a pairing, 2 random opening plies, colours
# alternating, played to the end) with SAI's sensible agent at lambda 0.5 and 512 simulations.
#   OUT=results/go_9x9/from_7x7 bash scripts/go_9x9_from_7x7.sh
# Writes $OUT/7x7/ (the first stage, no arena) and $OUT/ as scripts/go_from_scratch.sh does. Both stages' minutes
# count toward the two hours: SEVEN_MINUTES (default 55) and NINE_MINUTES (default 65).
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/go_9x9/from_7x7}
RUNS=${RUNS:-runs/go_9x9_from_7x7_$(date +%Y%m%d_%H%M%S)}
VISITS=${VISITS:-512:sensible_lambda=0.5}
GAME=go_7x7 PRESET=sai MINUTES=${SEVEN_MINUTES:-55} LEVELS="" RUN=$RUNS/7x7 OUT=$OUT/7x7 \
  bash scripts/go_from_scratch.sh --num_steps 2900 --global_pooling true --ownership_loss_weight 1.5 \
  --score_loss_weight 0.1
GAME=go_9x9 PRESET=sai MINUTES=${NINE_MINUTES:-65} VISITS=$VISITS LEVELS="1 10" RUN=$RUNS/9x9 OUT=$OUT \
  bash scripts/go_from_scratch.sh --init_from "$OUT/7x7/model"
exit
}
