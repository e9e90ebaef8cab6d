#!/usr/bin/env bash
# The run-book for an hour of a GPU (issue 31): what to measure first, in phases of under 10 minutes each (a lent
# device runs one command at most 10 minutes), all written to $OUT (default results/gpu/<device kind>/):
#   plan   `azjax plan --compile` of every game's full preset: memory per device (from shapes and XLA's analysis)
#          and the cold compile time of the training step                    -> plan_<game>.json
#   bench  self-play at the full presets of Connect Four, 9x9 Go and chess: ratios to the network-only ceiling and
#          to the plain mctx loop, search-contempt (n_scl 28) against plain, the phase breakdown -> bench_full.json
#          (chess without the plain loop                                                      -> bench_full_chess.json)
#   start  the first training step of 9x9 `full`, cold (empty compile cache) and warm (cache filled) -> runbook.json
#          (with the cache entries each start found and the programs it added: new_cache_entries)
#   sweep  8 seeds as one jitted program against the same 8 runs one after another              -> bench_sweep.json
#   train  9x9 `full` trained for $TRAIN_MINUTES minutes (default 8), its program read from the start phase's
#          compile cache, exported for CPU arenas                      -> go_9x9_full/ (--tiny: connect_four_tiny/)
#   (no phase, or `all`: every phase in turn). Each phase appends its command and seconds to runbook.json.
#
#   bash scripts/gpu_runbook.sh plan bench        # on a GPU, then: start, sweep, train
#   bash scripts/gpu_runbook.sh --tiny            # toy sizes on any machine, every phase (tests/test_runbook.py)
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
TINY=0
phases=()
for arg in "$@"; do
  case "$arg" in
  --tiny) TINY=1 ;;
  plan|bench|start|sweep|train) phases+=("$arg") ;;
  all) phases+=(plan bench start sweep train) ;;
  *) echo "gpu_runbook.sh: unknown argument $arg (phases: plan bench start sweep train all; --tiny)" >&2; exit 2 ;;
  esac
done
[ ${#phases[@]} -gt 0 ] || phases=(plan bench start sweep train)
KIND=$(python -c "import jax; print(jax.devices()[0].device_kind.replace(' ', '_').replace('/', '_'))")
OUT=${OUT:-results/gpu/$KIND}
RUNS=${RUNS:-runs/gpu_runbook}
TRAIN_MINUTES=${TRAIN_MINUTES:-8}
mkdir -p "$OUT" "$RUNS"

if [ "$TINY" = 1 ]; then
  # Small enough to compile and run in seconds on a CPU: the same commands, toy sizes.
  GAMES=(connect_four)
  # One SGD step a loop step: the loop unrolls its SGD steps, and the presets' 16 would compile 16 copies.
  TOY=(--num_blocks 1 --num_channels 8 --num_envs 8 --num_simulations 4 --moves_per_step 2 --replay_size 256
       --min_replay_size 8 --batch_size 8 --sgd_steps_per_step 1 --eval_every 0)
  PLAN_FLAGS=(--preset quick "${TOY[@]}")
  # The bench's own rows, the plain mctx loop's among them, are tested in tests/cli/test_cli.py: one program less here.
  BENCH_FLAGS=(--quick --game connect_four --n_scl 0 --skip_plain)
  BENCH_CHESS_FLAGS=()
  SWEEP_FLAGS=(--seeds 2 --steps 2 --sequential_runs 1 --other_steps 0 "${TOY[@]}")
  # Connect Four's toy loop compiles in a fraction of Go's: the start and train phases build it three times.
  TRAIN_FLAGS=(--game connect_four --preset quick "${TOY[@]}" --num_steps 2 --checkpoint_every 2)
  TRAINED=connect_four_tiny
else
  GAMES=(connect_four go_9x9 chess)
  PLAN_FLAGS=(--preset full)
  BENCH_FLAGS=(--preset full --game connect_four --game go_9x9 --breakdown --n_scl 28)
  # Chess apart, without the plain mctx loop: its vmapped backup touches every child of every node each step up,
  # 4672 moves a node, minutes a round at this size.
  BENCH_CHESS_FLAGS=(--preset full --game chess --breakdown --n_scl 28 --skip_plain)
  SWEEP_FLAGS=(--seeds 8 --steps 20 --sequential_runs 1)
  TRAIN_FLAGS=(--game go_9x9 --preset full --minutes "$TRAIN_MINUTES")
  TRAINED=go_9x9_full
fi

now() { date +%s.%N; }
# The start and train phases' compile cache: the start phase empties it first, for a cold start.
CACHE="$RUNS/compile_cache"
cache_names() { [ -d "$CACHE" ] && find "$CACHE" -type f -printf '%f\n' | sort || true; }

# Appends {"phase", "command", "seconds"} (from the start time $3 to now) to $OUT/runbook.json; given $4 (the
# compile cache's file names before the phase, one a line), also the number of entries it began with
# (cache_entries_before) and the programs it added (new_cache_entries: names without their hashes, e.g.
# jit__step_local).
record() {
  python - "$OUT/runbook.json" "$1" "$2" "$3" "$(now)" "$KIND" "$#" "${4-}" "$(cache_names)" <<'PY'
import json, re, sys
from pathlib import Path
path, phase, command, start, end, kind, n_args, before, after = sys.argv[1:]
book = json.loads(Path(path).read_text()) if Path(path).exists() else {"device_kind": kind, "phases": []}
row = {"phase": phase, "command": command, "seconds": round(float(end) - float(start), 1)}
if int(n_args) >= 4:
    new = sorted(set(after.split()) - set(before.split()))
    row["cache_entries_before"] = len(before.split())
    row["new_cache_entries"] = [re.sub(r"-[0-9a-f]{16,}-cache$", "", name) for name in new]
book["phases"].append(row)
Path(path).write_text(json.dumps(book, indent=1) + "\n")
PY
}

# Runs "$@" as phase $1, timed and recorded.
timed() {
  local phase=$1; shift
  local start; start=$(now)
  echo "== $phase: $*" >&2
  "$@"
  record "$phase" "$*" "$start"
}

# As timed, in the compile cache $CACHE, recording what the cache held before and what the phase added to it.
timed_in_cache() {
  local phase=$1; shift
  local start before; start=$(now); before=$(cache_names)
  echo "== $phase: $* (compile cache $CACHE)" >&2
  AZJAX_CACHE_DIR="$CACHE" "$@"
  record "$phase" "AZJAX_CACHE_DIR=$CACHE $*" "$start" "$before"
}

for phase in "${phases[@]}"; do
  case "$phase" in
  plan)
    for game in "${GAMES[@]}"; do
      timed plan azjax plan --game "$game" "${PLAN_FLAGS[@]}" --compile --out "$OUT/plan_$game.json"
    done ;;
  bench)
    timed bench azjax bench "${BENCH_FLAGS[@]}" --out "$OUT/bench_full.json"
    if [ "${#BENCH_CHESS_FLAGS[@]}" -gt 0 ]; then
      timed bench_chess azjax bench "${BENCH_CHESS_FLAGS[@]}" --out "$OUT/bench_full_chess.json"
    fi ;;
  start)
    # The first step twice: with an empty compile cache, then with the cache the first run filled.
    # runbook.json gets start_cold and start_warm: process start, build, compile (or cache read) and one step,
    # each with the number of compiled programs the cache held when it began (0 for the cold start).
    # `--stop_after 1`, not `--num_steps 1`: the program is the one the train phase runs, so it reads this cache.
    rm -rf "$CACHE"
    mkdir -p "$CACHE"
    for kind in cold warm; do
      rm -rf "$RUNS/start_$kind"
      timed_in_cache "start_$kind" azjax train "${TRAIN_FLAGS[@]}" --stop_after 1 --run_dir "$RUNS/start_$kind" \
        --no-progress
    done ;;
  sweep)
    timed sweep python -m scripts.bench_sweep "${SWEEP_FLAGS[@]}" --out "$OUT/bench_sweep.json" ;;
  train)
    # In the start phase's cache, where it ran: the training time is not spent compiling the same program again.
    rm -rf "$RUNS/train" "$OUT/$TRAINED"
    timed_in_cache train azjax train "${TRAIN_FLAGS[@]}" --run_dir "$RUNS/train" --no-progress
    azjax export "$RUNS/train" "$OUT/$TRAINED"
    cp "$RUNS/train/metrics.csv" "$OUT/$TRAINED/" ;;
  esac
done
echo "run-book output: $OUT" >&2
exit
}
