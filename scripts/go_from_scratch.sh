#!/usr/bin/env bash
# Go from scratch on a CPU, then the arena table: trains GAME (go_7x7 or go_9x9) with PRESET for at most $MINUTES
# minutes, the CPU split into two JAX devices (AZJAX_CPU_DEVICES, one per core), exports the network and plays it
# ($VISITS simulations, optionally with spec options: VISITS=512:sensible_lambda=0.5) against GNU Go at each level of
# $LEVELS (default 1 and 10; LEVELS="" plays none) under the rules pgx scores by
# (area, positional superko, dead stones captured), 40 games a pairing, 2 random opening plies, colours alternating,
# at each komi of $KOMIS.
# Writes:
#   $OUT/{config.json,metrics.csv,curves.png,train_log.txt,command.txt}, $OUT/model/ (the exported network)
#   $OUT/arena_komi<K>/{results.json,games.sgf}
# Arguments are passed on to `azjax train` (e.g. `--ownership_loss_weight 1.5 --score_loss_weight 0.1`, or
# `--init_from results/models/go_7x7_...` for a warm start whose own training time must be counted too).
#   GAME=go_9x9 PRESET=quick MINUTES=150 OUT=results/go_9x9/katago_aux bash scripts/go_from_scratch.sh --ownership_loss_weight 1.5
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
GAME=${GAME:-go_9x9}
PRESET=${PRESET:-quick}
MINUTES=${MINUTES:-150}
VISITS=${VISITS:-128}
LEVELS=${LEVELS-"1 10"}  # set empty: no arena (a first stage that another run continues)
RUN=${RUN:-runs/${GAME}_$(date +%Y%m%d_%H%M%S)}
OUT=${OUT:-results/$GAME/from_scratch}
case "$GAME" in
  go_7x7) SIZE=7; KOMIS=${KOMIS:-"9.5 7.5"} ;;
  go_9x9) SIZE=9; KOMIS=${KOMIS:-"7.5"} ;;
  *) echo "go_from_scratch.sh: GAME must be go_7x7 or go_9x9, got $GAME" >&2; exit 2 ;;
esac
GNUGO=$(command -v gnugo || echo /usr/games/gnugo)
export AZJAX_CPU_DEVICES="${AZJAX_CPU_DEVICES:-2}"
mkdir -p "$OUT"
echo "GAME=$GAME PRESET=$PRESET MINUTES=$MINUTES VISITS=$VISITS LEVELS=\"$LEVELS\" RUN=$RUN OUT=$OUT bash scripts/go_from_scratch.sh $*" \
  > "$OUT/command.txt"
( time azjax train --game "$GAME" --preset "$PRESET" --minutes "$MINUTES" --run_dir "$RUN" --no-progress "$@" ) 2>&1 \
  | tee "$OUT/train_log.txt"
rm -rf "$OUT/model"
azjax export "$RUN" "$OUT/model"
cp "$RUN"/{curves.png,metrics.csv,config.json} "$OUT/"
[ -n "$LEVELS" ] || KOMIS=""
for komi in $KOMIS; do
  GNU="$GNUGO --mode gtp --boardsize $SIZE --komi $komi --chinese-rules --capture-all-dead --positional-superko --never-resign"
  # Both play at this komi: a SAI network reads it from the game; a tanh network's values learnt its config's komi.
  opponents=()
  for level in $LEVELS; do opponents+=("gnugo-l$level=gtp:$GNU --level $level"); done
  azjax arena "$OUT/model:$VISITS" "${opponents[@]}" \
    --gauntlet --games 40 --random_opening_plies 2 --komi "$komi" --out_dir "$OUT/arena_komi$komi"
done
exit
}
