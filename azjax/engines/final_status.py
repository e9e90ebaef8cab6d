"""GTP's `final_status_list alive|dead|seki`: which stones of a Go position are dead.

    chains = stone_status(engine, "dead")     # [["C3", "C4"], ["G7"]]: one chain (string) a list

Two sources, by what the network has:

  * A network with KataGo's ownership head (`ownership_loss_weight` > 0, as in the `sai` preset's
    models): a chain is dead when the head expects the other colour to own its points at the end, on
    average over the chain's stones (mean ownership from the chain's colour's view below 0). The head learnt
    the owners of self-play's final Tromp-Taylor boards, where a dead stone left on the board would still count
    for its colour, so self-play captures dead stones before the game ends, and the head's "the other side owns
    this point" means "this chain gets captured". One network evaluation of the position as it stands, no search.
  * Any other network: Tromp-Taylor area scoring, the rules pgx plays and `final_score` counts by, scores the board
    as it stands: every stone counts for its own colour, so no stone's point ever counts for the other side and no
    stone is dead (`dead` is empty, `alive` lists every stone). This agrees with `final_score`; under these rules a
    dead chain must be captured before the game ends, or it counts.

`seki` is always empty: neither source tells seki from life (a seki chain is `alive`, or, where the ownership head
leans to the other side, `dead`). With the ownership head, `final_status_list` can mark stones dead that
`final_score` (the rules' count of the board as it stands) counts as alive.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.build import has_auxiliary_targets, make_network
from azjax.config import Config
from azjax.games import GO_COLUMNS, Game
from azjax.network import AUXILIARY, auxiliary_outputs

if TYPE_CHECKING:
    from azjax.engines.engine import Engine

STATUSES = ("alive", "dead", "seki")


def chains(board: np.ndarray) -> list[list[tuple[int, int]]]:
    """The chains (strings) of a board (int [size, size], +1 Black, -1 White, 0 empty; row 0 the top), each a list
    of (row, column) points, in reading order of their first point (top to bottom, left to right)."""
    size = board.shape[0]
    seen = np.zeros(board.shape, bool)
    out = []
    for r in range(size):
        for c in range(size):
            if board[r, c] == 0 or seen[r, c]:
                continue
            colour, chain, stack = board[r, c], [], [(r, c)]
            seen[r, c] = True
            while stack:
                p = stack.pop()
                chain.append(p)
                for q in ((p[0] - 1, p[1]), (p[0] + 1, p[1]), (p[0], p[1] - 1), (p[0], p[1] + 1)):
                    if 0 <= q[0] < size and 0 <= q[1] < size and not seen[q] and board[q] == colour:
                        seen[q] = True
                        stack.append(q)
            out.append(sorted(chain))
    return out


def vertex(point: tuple[int, int], size: int) -> str:
    """(row from the top, column) -> a GTP vertex."""
    return f"{GO_COLUMNS[point[1]]}{size - point[0]}"


@functools.cache
def _jitted_ownership(config: Config, game: Game) -> Any:
    """(params, observation [1, ...]) -> float32 [size, size]: the ownership head's tanh, the player to move's view."""
    net = make_network(config, game)

    def ownership(params: Any, observation: jax.Array) -> jax.Array:
        _, variables = net.apply(params, observation, mutable=[AUXILIARY])
        return jnp.tanh(auxiliary_outputs(variables)["ownership_logit"][0])

    return jax.jit(ownership)


def has_ownership(config: Config) -> bool:
    """The network has KataGo's ownership head, trained (a network with the score target alone has the head too,
    untrained)."""
    return has_auxiliary_targets(config) and config.ownership_loss_weight > 0


def black_ownership(engine: Engine) -> np.ndarray:
    """float [size, size]: the ownership head's estimate of each point's final owner, Black's view (+1 Black,
    -1 White), of the engine's position; row 0 the top."""
    state = engine.position.state
    own = np.asarray(_jitted_ownership(engine.config, engine.game)(engine.params, state.observation[None]))
    black_to_move = int(engine.game.color_to_move(state)) == 0  # type: ignore[attr-defined]
    return own if black_to_move else -own


def dead_chains(board: np.ndarray, ownership: np.ndarray | None) -> list[list[tuple[int, int]]]:
    """The chains whose mean ownership (Black's view, [size, size]) is on the other colour's side; none without
    an ownership estimate (Tromp-Taylor counts every stone on the board for its colour)."""
    if ownership is None:
        return []
    return [ch for ch in chains(board) if np.mean([ownership[p] * board[p] for p in ch]) < 0]


def stone_status(engine: Engine, status: str) -> list[list[str]]:
    """The chains of the engine's Go position with `status` ("alive", "dead" or "seki"), as GTP vertices."""
    if status not in STATUSES:
        raise ValueError(f"invalid status {status!r} (alive, dead or seki)")
    game = engine.game
    board = game.board(engine.position.state)  # type: ignore[attr-defined]
    if status == "seki":
        return []
    ownership = black_ownership(engine) if has_ownership(engine.config) else None
    dead = dead_chains(board, ownership)
    listed = dead if status == "dead" else [ch for ch in chains(board) if ch not in dead]
    return [[vertex(p, game.size) for p in ch] for ch in listed]  # type: ignore[attr-defined]
