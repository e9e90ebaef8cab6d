#!/usr/bin/env bash
# One session's segment of a long training run that outlives its machine (runs/ is not committed; results/ is):
#   bash scripts/train_segment.sh RUN_DIR KEEP_DIR MINUTES [azjax train arguments of a new run ...]
# - RUN_DIR holds the run on this machine: resumed from its orbax checkpoints where it has them (bit for bit);
# - else, where KEEP_DIR holds a committed portable state (trainer.msgpack, checkpoint.py), RUN_DIR is rebuilt from
#   it and resumed (a fresh replay, refilled by self-play);
# - else a new run starts with the arguments given.
# It trains for at most MINUTES, then copies what a later session resumes from into KEEP_DIR (config.json,
# metrics.csv, params.msgpack, trainer.msgpack, curves.png) and appends the segment's log to KEEP_DIR/train_log.txt,
# with the segment's command in KEEP_DIR/command.txt. Commit KEEP_DIR when it returns.
#   bash scripts/train_segment.sh runs/chess_prior results/chess_prior/run 85 --game chess --preset hour
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${1:?usage: train_segment.sh RUN_DIR KEEP_DIR MINUTES [train arguments]}
KEEP=${2:?usage: train_segment.sh RUN_DIR KEEP_DIR MINUTES [train arguments]}
MINUTES=${3:?usage: train_segment.sh RUN_DIR KEEP_DIR MINUTES [train arguments]}
shift 3
export AZJAX_CPU_DEVICES="${AZJAX_CPU_DEVICES:-2}"
mkdir -p "$KEEP"
if [ -d "$RUN/checkpoints" ] && [ -n "$(ls -A "$RUN/checkpoints" 2>/dev/null)" ]; then
  how="resumed from its checkpoints"
  args=(--resume "$RUN")
elif [ -f "$KEEP/trainer.msgpack" ]; then
  [ ! -e "$RUN" ] || { echo "train_segment.sh: $RUN exists without checkpoints; move it away first" >&2; exit 2; }
  mkdir -p "$RUN"
  cp "$KEEP"/{config.json,metrics.csv,params.msgpack,trainer.msgpack} "$RUN/"
  how="resumed from $KEEP/trainer.msgpack"
  args=(--resume "$RUN")
else
  how="new"
  args=(--run_dir "$RUN" "$@")
fi
echo "bash scripts/train_segment.sh $RUN $KEEP $MINUTES $* ($how, $(date -u +%Y-%m-%dT%H:%MZ))" >> "$KEEP/command.txt"
status=0
{ echo "# segment: $how"; azjax train "${args[@]}" --minutes "$MINUTES" --no-progress 2>&1; } \
  | tee -a "$KEEP/train_log.txt" || status=$?
for f in config.json metrics.csv params.msgpack trainer.msgpack curves.png; do
  [ ! -f "$RUN/$f" ] || cp "$RUN/$f" "$KEEP/$f"
done
[ "$status" -eq 0 ] || exit "$status"
exit
}
