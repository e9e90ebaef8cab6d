"""The registry of games: their names, defaults and move caps, and `make_game`."""

from __future__ import annotations

import pgx

from azjax.games.base import Game
from azjax.games.chess import ADJUDICATE_RESULTS, ODDS_FENS, Chess, check_fen
from azjax.games.chess_rules import ChessEnv
from azjax.games.connect_four import ConnectFour
from azjax.games.go import Go
from azjax.games.go_rules import go_env

GAMES = ("connect_four", "go_7x7", "go_9x9", "chess")
MAX_CHESS_PLIES = 512  # self-play's chess games end (drawn) here, as pgx's and AlphaZero's did (`ChessEnv(max_plies)`)
# Engines, arenas and human games play chess to its own end (the fifty-move rule ends every game): their cap is far
# above any real game, and a game that reaches it is reported as cut short (`Game.cut_short`), as Go's are.
CHESS_PLAY_PLIES = 2048
DEFAULT_KOMI = {"go_7x7": 9.5, "go_9x9": 7.5}
# pgx ends a Go game after size² x 2 moves (98 on 7x7, 162 on 9x9) and scores the board where it stands, short of
# the end of some real games. Self-play keeps that cap (its games, and the loop goldens, depend on it). Engines,
# arenas and human games (`play_max_moves`, through `azjax.build.game_named`) allow 8 x size² moves (392 on 7x7,
# 648 on 9x9), far above any real game; one that still reaches the cap is reported as cut short (`Game.cut_short`).
GO_SELFPLAY_MOVES_PER_POINT = 2
GO_PLAY_MOVES_PER_POINT = 8


def play_max_moves(name: str) -> int | None:
    """The move cap of played (not self-play) games of `name`: Go's `GO_PLAY_MOVES_PER_POINT` x size², chess's
    `CHESS_PLAY_PLIES`; None for Connect Four, whose board ends every game within 42 moves."""
    if name == "chess":
        return CHESS_PLAY_PLIES
    if not name.startswith("go_") or name not in GAMES:
        return None
    return GO_PLAY_MOVES_PER_POINT * int(name[3]) ** 2


def make_game(name: str, *, komi: float | None = None, start: str | None = None, adjudicate_plies: int = 0,
              adjudicate_margin: float = 3.0, adjudicate_result: str = "margin", adjudicate_scale: float = 1.0,
              max_moves: int | None = None) -> Game:
    """The game `name` from the registry.

    Args:
      name: one of `GAMES`.
      komi: Go only; the default komi of new games (7x7: 9.5, 9x9: 7.5).
      start: chess only; `standard`, an odds start (`queen_odds`, `rook_odds`, `knight_odds`)
        or a FEN.
      adjudicate_plies, adjudicate_margin: chess only; games still running after this many plies end, won by
        the side this many pawns ahead in material, else drawn (0 = off: chess's own rules).
      adjudicate_result: chess only; "margin" (the above) or "proportional" (the lead / margin, clipped to
        [-1, 1]; `material_result`).
      adjudicate_scale: chess only; the adjudicated result times this, in (0, 1] (1: as it is), so a material
        lead is worth less than a mate.
      max_moves: Go and chess; the move cap. Go: a game ends there scored where it stands (default: self-play's,
        `GO_SELFPLAY_MOVES_PER_POINT` x size², pgx's own). Chess: a game ends there drawn (default: self-play's
        `MAX_CHESS_PLIES`, pgx's). `play_max_moves(name)` is the cap of played games.
    """
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; choose one of {', '.join(GAMES)}")
    if komi is not None and not name.startswith("go_"):
        raise ValueError(f"komi applies to Go only, not {name!r}")
    if start not in (None, "", "standard") and name != "chess":
        raise ValueError(f"start positions apply to chess only, not {name!r}")
    if adjudicate_plies and name != "chess":
        raise ValueError(f"material adjudication applies to chess only, not {name!r}")
    if max_moves is not None and name == "connect_four":
        raise ValueError(f"max_moves applies to Go and chess, not {name!r}")
    if max_moves is not None and max_moves < 1:
        raise ValueError(f"max_moves must be >= 1, got {max_moves}")
    if adjudicate_result not in ADJUDICATE_RESULTS:
        raise ValueError(f"adjudicate_result must be one of {', '.join(ADJUDICATE_RESULTS)}, got {adjudicate_result!r}")
    if not 0 < adjudicate_scale <= 1:
        raise ValueError(f"adjudicate_scale must be in (0, 1] (1 = off), got {adjudicate_scale}")
    if not 0 <= adjudicate_plies < MAX_CHESS_PLIES:
        raise ValueError(f"adjudicate_plies must be in [0, {MAX_CHESS_PLIES}) (0 = off), got {adjudicate_plies}")
    if name == "connect_four":
        return ConnectFour(name=name, env=pgx.make("connect_four"), max_moves=42)
    if name.startswith("go_"):
        size = int(name[3])
        komi = DEFAULT_KOMI[name] if komi is None else float(komi)
        if (komi * 2) % 2 != 1:
            raise ValueError(f"komi must be a half-integer (e.g. 7.5) so no game is drawn, got {komi}")
        cap = GO_SELFPLAY_MOVES_PER_POINT * size * size if max_moves is None else int(max_moves)
        return Go(name=name, env=go_env(size, cap), max_moves=cap, komi=komi, size=size)
    fen = ODDS_FENS.get(start or "standard", start)
    assert fen is not None
    check_fen(fen)  # validate now, with a clear error (the state is built on the first `init`)
    cap = MAX_CHESS_PLIES if max_moves is None else int(max_moves)
    if adjudicate_plies and adjudicate_plies >= cap:
        raise ValueError(f"adjudicate_plies ({adjudicate_plies}) must be below the ply cap ({cap})")
    return Chess(name=name, env=ChessEnv(max_plies=cap), max_moves=adjudicate_plies or cap,
                 start_fen=fen, adjudicate_plies=adjudicate_plies, adjudicate_margin=float(adjudicate_margin),
                 adjudicate_result=adjudicate_result, adjudicate_scale=float(adjudicate_scale))
