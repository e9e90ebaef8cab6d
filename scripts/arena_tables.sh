#!/usr/bin/env bash
# The arena tables committed under results/arena/ (issue 5): Connect Four checkpoints against rollout
# MCTS at several budgets, the 7x7 (SAI) and 9x9 Go models against GNU Go levels, and the chess model
# against random play and a one-ply material player. Each writes results.json (pairings,
# maximum-likelihood Elo with 95% intervals, the command) and the games.
#   bash scripts/arena_tables.sh [connect_four|go_7x7|go_9x9|chess]...   (default: all)
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -euo pipefail
cd "$(dirname "$0")/.."
GNUGO=$(command -v gnugo || echo /usr/games/gnugo)
tables=("$@"); [ ${#tables[@]} -gt 0 ] || tables=(connect_four go_7x7 go_9x9 chess)
for table in "${tables[@]}"; do
  case "$table" in
  connect_four)
    # The quick run's final network with its Gumbel search at 256 and 64 simulations, and its
    # step-200 checkpoint, against UCT with random playouts at 100-800 simulations; 2 random opening
    # plies so that deterministic pairs play varied games.
    azjax arena final-gumbel256=results/models/connect_four_quick:256:search=gumbel \
      final-gumbel64=results/models/connect_four_quick:64:search=gumbel \
      step200-gumbel256=results/connect_four/connect_four_quick/checkpoint_step200:256:search=gumbel \
      mcts:100 mcts:200 mcts:400 mcts:800 \
      --games 20 --random_opening_plies 2 --out_dir results/arena/connect_four ;;
  go_7x7)
    # The 7x7 model trained from scratch in 55 CPU minutes (results/models/go_7x7_pooled/README.md) with SAI's
    # sensible agent (lambda 0.5) and a 2048-simulation search against GNU Go 3.8 at level 10, under the rules pgx
    # scores by, at komi 9.5 (results/arena/go_7x7) and 7.5 (results/arena/go_7x7/komi_7.5: Black wins with perfect
    # play); 40 games a pairing, 2 random opening plies, colours alternating. The older go_7x7_sai model's tables
    # are go_7x7_sai/.
    for komi in 7.5 9.5; do
      out=results/arena/go_7x7; [ "$komi" = 9.5 ] || out=results/arena/go_7x7/komi_$komi
      GNU="$GNUGO --mode gtp --boardsize 7 --komi $komi --chinese-rules --capture-all-dead --positional-superko --never-resign"
      azjax arena results/models/go_7x7_pooled:2048:sensible_lambda=0.5 "gnugo-l10=gtp:$GNU --level 10" \
        --gauntlet --games 40 --random_opening_plies 2 --komi "$komi" --out_dir "$out"
    done ;;
  go_9x9)
    # 9x9 from scratch in two CPU hours (results/models/go_9x9_sai/README.md) with SAI's sensible agent (lambda 0.5)
    # and a 512-simulation Gumbel search, against random play and GNU Go 3.8 at levels 1 and 10, under the rules pgx
    # scores by (area, komi 7.5, positional superko, dead stones captured); 40 games a pairing, 2 random opening
    # plies, colours alternating. The hour-trained model's table (results/models/go_9x9_quick) is go_9x9_quick/.
    GNU="$GNUGO --mode gtp --boardsize 9 --komi 7.5 --chinese-rules --capture-all-dead --positional-superko --never-resign"
    azjax arena results/models/go_9x9_sai:512:sensible_lambda=0.5 random "gnugo-l1=gtp:$GNU --level 1" \
      "gnugo-l10=gtp:$GNU --level 10" --gauntlet --games 40 --random_opening_plies 2 --komi 7.5 \
      --out_dir results/arena/go_9x9 ;;
  chess)
    # The chess model trained from scratch in 131 CPU minutes (results/models/chess_hour/README.md) with a
    # 64-simulation search (its player's Gumbel root: 64 moves at c_scale 1) against random play, the one-ply
    # material player and Stockfish at UCI_Elo 1350, 40 games a pairing (2 random opening plies, colours
    # alternating) under chess's own rules; then its values a queen up and a queen down, each side to move
    # (results/arena/chess/material_positions.txt), as `azjax analyze` reads them.
    # The hour-trained chess_quick model's table is chess_quick/.
    STOCKFISH=$(command -v stockfish || echo /usr/games/stockfish)
    azjax arena results/models/chess_hour:64 random material \
      "stockfish-elo1350=uci:$STOCKFISH:UCI_LimitStrength=true,UCI_Elo=1350,movetime=100" \
      --gauntlet --games 40 --random_opening_plies 2 --out_dir results/arena/chess
    azjax analyze --checkpoint results/models/chess_hour --visits 64 \
      --positions results/arena/chess/material_positions.txt --out results/arena/chess/material_values.jsonl ;;
  *) echo "unknown table $table (connect_four, go_7x7, go_9x9, chess)" >&2; exit 2 ;;
  esac
done
exit
}
