#!/usr/bin/env bash
# Grades a chess model as issue 61 asks, with the model's own play settings (its config's eval_simulations, player
# root and certainty propagation: no :N or options given): against uniformly random play (100 games), the one-ply
# material player (40), Stockfish 15.1 at Skill Level 0 searching to depth 1 (40) and at UCI_Elo 1350, 0.1 s a move
# (40); 2 random opening plies, colours alternating, chess's own rules (no adjudication). Then how the games ended.
#   bash scripts/chess_grade.sh MODEL OUT_DIR [GAMES_SCALE]
# GAMES_SCALE (default 1) divides every row's games, for a quick look (a scale of 4: 25 / 10 / 10 / 10).
# Writes OUT_DIR/{results.json,games.pgn,endings.json,command.txt}.
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:?usage: chess_grade.sh MODEL OUT_DIR [GAMES_SCALE]}
OUT=${2:?usage: chess_grade.sh MODEL OUT_DIR [GAMES_SCALE]}
SCALE=${3:-1}
STOCKFISH=$(command -v stockfish || echo /usr/games/stockfish)
[ -x "$STOCKFISH" ] || { echo "chess_grade.sh: Stockfish not found (apt-get install stockfish)" >&2; exit 1; }
mkdir -p "$OUT"
echo "bash scripts/chess_grade.sh $*" > "$OUT/command.txt"
even() { local n=$(( $1 / SCALE )); echo $(( n < 2 ? 2 : n - n % 2 )); }
azjax arena "$MODEL" random --gauntlet --games "$(even 100)" --random_opening_plies 2 --out_dir "$OUT/random"
azjax arena "$MODEL" material \
  "stockfish-skill0-depth1=uci:$STOCKFISH:skill=0,depth=1" \
  "stockfish-elo1350=uci:$STOCKFISH:UCI_LimitStrength=true,UCI_Elo=1350,movetime=100" \
  --gauntlet --games "$(even 40)" --random_opening_plies 2 --out_dir "$OUT/engines"
python -m lab.chess_probes.chess_endings "$OUT/random"
python -m lab.chess_probes.chess_endings "$OUT/engines"
exit
}
