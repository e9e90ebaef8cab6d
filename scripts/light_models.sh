#!/usr/bin/env bash
# The CPU-trained 9x9 Go and chess models in results/models/ (issue 9): the `quick` preset of each game
# with the normalised heads, trained for about an hour on 2 CPU cores, then exported (config + parameters).
# They show that the heads stay alive and what an hour of CPU buys; the strength tables are in
# results/arena/go_9x9 and results/arena/chess (scripts/arena_tables.sh).
#   bash scripts/light_models.sh [go_9x9|chess]...   (default: both)
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
games=("$@"); [ ${#games[@]} -gt 0 ] || games=(go_9x9 chess)
for g in "${games[@]}"; do
  case "$g" in
  # 800 steps of ~3.4 s fill the hour; the averaged weights are exported.
  go_9x9) flags=(--num_steps 800 --swa_decay 0.99 --eval_every 0 --checkpoint_every 50 --minutes 58)
          runner=() ;;
  # The preset as it is (self-play adjudicated by material after 160 plies), for 60 minutes under the memory
  # soak, which adds --minutes and writes the `memory` section of results/reliability/reliability.json.
  chess) flags=()
         runner=(python -m lab.reliability.memory_soak --minutes 60 --log runs/chess_light.train.log --) ;;
  *) echo "unknown game $g (go_9x9, chess)" >&2; exit 2 ;;
  esac
  run=runs/${g}_light
  rm -rf "$run"
  start=$(date +%s)
  "${runner[@]}" azjax train --game "$g" --preset quick --run_dir "$run" --no-progress "${flags[@]}" 2>&1 \
    | tee "runs/${g}_light.log"
  secs=$(( $(date +%s) - start ))
  dest=results/models/${g}_quick
  azjax export "$run" "$dest"
  cp "$run/metrics.csv" "$run/curves.png" "$dest/"
  cat > "$dest/README.md" <<MD
# ${g}_quick: an azjax model trained for an hour on a CPU

Trained by \`bash scripts/light_models.sh $g\`: \`${runner[*]} azjax train --game $g --preset quick ${flags[*]}\`,
${secs} s on $(nproc) CPU cores ($(date -u +%Y-%m-%d)), exported with the run's averaged weights.
\`metrics.csv\` and \`curves.png\` are the run's own; its games against other players are in
results/arena/$g (scripts/arena_tables.sh $g).
MD
done
exit
}
