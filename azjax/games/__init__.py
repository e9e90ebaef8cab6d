"""Games: a registry of pgx-backed two-player games behind one small adapter.

Every game is seen through `Game`, whose jittable methods take and return a `GameState`:

    state = game.init(key)                  # a new game (optionally with a komi)
    state = game.step(state, action)        # one move
    state.observation, state.legal_action_mask, state.current_player,
    state.terminated, state.rewards         # read-outs, as in pgx

`GameState` wraps the pgx state and adds the per-game komi, so a single batch of Go games can mix
komi values (pgx fixes the komi per environment object). The Go adapter builds pgx's Go with komi 0
and rescores finished games from the board with each game's own komi (area scoring, Tromp-Taylor).

Host-side helpers (`render`, `action_to_str`, `parse_action`) speak each game's usual notation:
Connect Four columns 1-7, Go vertices (`D4`, `pass`), UCI moves for chess. What else differs between
games (komi, board scores, FEN starts, colour names, GTP's vertex case) is asked of the game
(`has_komi`, `check_komi`, `scored`, `black_margin`, `has_fen`, `start_position`, `fen`, `side_to_move`,
`move_to_gtp`, ...), so host code never tests a game's type.

The modules: `base.py` (`Game`, `GameState`), one per game (`connect_four.py`, `go.py`, `chess.py`, with
`go_rules.py` for pgx's Go made faster), `registry.py` (`make_game`), `augment.py` (board symmetries).
"""

from azjax.games.base import Game, GameState, board_arrays, where_games
from azjax.games.chess import (
    ADJUDICATE_RESULTS,
    ODDS_FENS,
    PIECE_VALUES,
    STANDARD_FEN,
    Chess,
    check_fen,
    chess_state_from_fen,
    material_diff,
    material_result,
)
from azjax.games.connect_four import ConnectFour
from azjax.games.go import GO_COLUMNS, Go, board_lead_black
from azjax.games.registry import (
    DEFAULT_KOMI,
    GAMES,
    GO_PLAY_MOVES_PER_POINT,
    GO_SELFPLAY_MOVES_PER_POINT,
    MAX_CHESS_PLIES,
    make_game,
    play_max_moves,
)

__all__ = [
    "ADJUDICATE_RESULTS",
    "DEFAULT_KOMI",
    "GAMES",
    "GO_COLUMNS",
    "GO_PLAY_MOVES_PER_POINT",
    "GO_SELFPLAY_MOVES_PER_POINT",
    "MAX_CHESS_PLIES",
    "ODDS_FENS",
    "PIECE_VALUES",
    "STANDARD_FEN",
    "Chess",
    "ConnectFour",
    "Game",
    "GameState",
    "Go",
    "board_arrays",
    "board_lead_black",
    "check_fen",
    "chess_state_from_fen",
    "make_game",
    "material_diff",
    "material_result",
    "play_max_moves",
    "where_games",
]
