#!/usr/bin/env bash
# The lightly trained 9x9 Go and chess models in results/models/ (issue 5): the `quick` preset of
# each game, cut to a number of loop steps that fits a short CPU run, then exported (config +
# parameters only). They exist so every engine (`azjax gtp`, `azjax uci`, `azjax analyze`,
# `azjax arena`) can be tried at once; they are weak players, not trained ones.
#   bash scripts/light_models.sh [go_9x9|chess]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
games=("$@"); [ ${#games[@]} -gt 0 ] || games=(go_9x9 chess)
for g in "${games[@]}"; do
  case "$g" in
  go_9x9) flags=(--num_steps "${GO_STEPS:-100}" --eval_every 0 --checkpoint_every 50) ;;
  # Chess games run to hundreds of plies: 32 moves a step so games finish (and train) within the run.
  chess) flags=(--num_steps "${CHESS_STEPS:-40}" --moves_per_step 32 --num_simulations 8
                --max_num_considered_actions 8 --eval_every 0 --checkpoint_every 20) ;;
  *) echo "unknown game $g (go_9x9, chess)" >&2; exit 2 ;;
  esac
  run=runs/${g}_light
  rm -rf "$run"
  start=$(date +%s)
  azjax train --game "$g" --preset quick --run_dir "$run" --no-progress "${flags[@]}" 2>&1 | tee "runs/${g}_light.log"
  secs=$(( $(date +%s) - start ))
  dest=results/models/${g}_quick
  azjax export "$run" "$dest"
  cp "$run/metrics.csv" "$run/curves.png" "$dest/"
  cat > "$dest/README.md" <<MD
# ${g}_quick: a lightly trained azjax model

Trained by \`bash scripts/light_models.sh $g\`: the \`quick\` preset of \`$g\` with
\`${flags[*]}\`, ${secs} s on $(nproc) CPU cores ($(date -u +%Y-%m-%d)). \`metrics.csv\` and
\`curves.png\` are the run's own. It plays legal, weak moves: good for trying the engines, not for
strength claims.
MD
done
