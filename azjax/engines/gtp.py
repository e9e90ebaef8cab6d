"""`azjax gtp`: a GTP version 2 engine for any game in the registry.

    azjax gtp --checkpoint DIR [--visits N] [--n_scl K]

Commands: protocol_version, name, version, known_command, list_commands, boardsize, clear_board,
komi, play, genmove, undo, showboard, final_score, time_settings, time_left, quit, and the analysis
commands `lz-analyze` / `azjax-analyze`.

Conventions:
  * Responses are `= result` / `? message` followed by an empty line; a numeric id is echoed
    (`12 genmove b` -> `=12 D4`). A malformed or illegal command answers `? ...` and the engine keeps
    running; comments (`#...`) and empty lines are ignored.
  * Moves use each game's notation: Go vertices (`D4`, `pass`); Connect Four columns `1`-`7`; chess
    UCI moves (`e2e4`, `e7e8q`). Colours are `b`/`black` and `w`/`white`: Go's colours; chess's sides;
    in Connect Four `b` is the first player and `w` the second.
  * Playing (or generating) for the side not to move: in Go the other side first passes (unless that
    pass would end the game, which is refused); other games refuse (`? not b's turn`).
  * `boardsize` accepts only the checkpoint's board size (else `? unacceptable size`), `komi` sets
    the komi of the current game (kept across `clear_board`), `final_score` is Tromp-Taylor area
    scoring minus komi (`B+3.5`, `W+0.5`, `0`). These three are Go-only (`? ... Go only`).
  * `genmove` never resigns; after the game has ended it answers `? the game is over` (`... cut short by the
    648-move cap` when the move cap ended it: Go runs to 8 x size² moves, far past pgx's own cap of 2 x size²
    and any real game).
  * The network loads in the background (`azjax.engines.loading`): `protocol_version`, `name`, `version`,
    `known_command`, `list_commands` and `quit` answer at once; other commands wait for the load, and answer
    `? cannot load checkpoint ...` if it failed (also said once on stderr).
  * `time_settings` / `time_left` are stored; with a known `time_left` the visit budget of
    `genmove` is capped (at most time_left / 20 seconds, or the byo-yomi period per stone) using the
    measured speed of earlier searches (powers of two below `--visits`).
  * `lz-analyze [colour] [interval]` (alias `azjax-analyze`) searches the current position once and
    answers `=` followed by one line per move with visits, most visited first:
        info move D4 visits 12 winrate 5234 prior 1532 lcb 5234 order 0 pv D4 E5 C3
    winrate and prior in units of 1/10000 (Leela Zero's convention), winrate = (1 + Q) / 2 of the
    player to move; the response ends with the usual empty line (no streaming, no need to interrupt).
"""

from __future__ import annotations

import argparse
import io
import math
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from azjax.engines.loading import EngineLoad, one_line, start_engine
from azjax.engines.records import format_go_score

if TYPE_CHECKING:  # the engine module (flax, mctx) is imported by the background load, after the handshake
    from azjax.engines.engine import Engine
    from azjax.engines.position import Position

VERSION = "0.1.0"
COMMANDS = (
    "protocol_version", "name", "version", "known_command", "list_commands", "boardsize", "clear_board",
    "komi", "play", "genmove", "undo", "showboard", "final_score", "time_settings", "time_left", "quit",
    "lz-analyze", "azjax-analyze",
)  # fmt: skip


class GTPError(Exception):
    """A command that fails; the message follows `?`."""


def parse_color(text: str) -> str:
    t = text.lower()
    if t in ("b", "black"):
        return "b"
    if t in ("w", "white"):
        return "w"
    raise GTPError(f"invalid color {text!r}")


def clean_line(line: str) -> str:
    """GTP preprocessing (spec section 3.1): drop control characters except tab/newline (C1 controls
    U+0080-U+009F too), strip comments, tabs to spaces, strip spaces. Only spaces are stripped: a line
    of other (unicode) whitespace is a command, and gets an answer (`? empty command`)."""
    line = "".join(ch for ch in line if ch in "\t\n" or not (ord(ch) < 32 or 127 <= ord(ch) < 160))
    line = line.split("#", 1)[0].replace("\t", " ")
    return line.strip(" \n")


def engine_streams(inp: TextIO | None, out: TextIO | None) -> tuple[TextIO, TextIO]:
    """stdin/stdout for an engine talking to a GUI: undecodable input bytes become U+FFFD instead of
    ending the engine with a UnicodeDecodeError, and output never fails to encode."""
    if inp is None:
        inp = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    if out is None:
        out = sys.stdout
        if isinstance(out, io.TextIOWrapper):
            out.reconfigure(errors="backslashreplace")
    return inp, out


class GTPEngine:
    """A GTP server over text streams (stdin/stdout by default; tests pass StringIO).

    `engine` may still be loading (`EngineLoad`): the handshake commands answer at once, the others wait for it.
    """

    def __init__(self, engine: Engine | EngineLoad, inp: TextIO | None = None, out: TextIO | None = None):
        self.load = engine if isinstance(engine, EngineLoad) else EngineLoad.ready(engine)
        self.inp = inp if inp is not None else sys.stdin
        self.out = out if out is not None else sys.stdout
        self.time_settings: tuple[float, float, int] | None = None
        self.time_left: dict[str, tuple[float, int]] = {}
        self.handlers: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda a: "2",
            "name": lambda a: "azjax",
            "version": lambda a: VERSION,
            "known_command": lambda a: "true" if a and a[0] in COMMANDS else "false",
            "list_commands": lambda a: "\n".join(COMMANDS),
            "boardsize": self.cmd_boardsize,
            "clear_board": self.cmd_clear_board,
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "undo": self.cmd_undo,
            "showboard": lambda a: "\n" + self.position.render(),
            "final_score": self.cmd_final_score,
            "time_settings": self.cmd_time_settings,
            "time_left": self.cmd_time_left,
            "lz-analyze": self.cmd_analyze,
            "azjax-analyze": self.cmd_analyze,
            "quit": lambda a: "",
        }

    @property
    def engine(self) -> Engine:
        """The engine; waits for the background load (raises EngineLoadError, a ValueError, if it failed)."""
        return self.load.get()

    @property
    def position(self) -> Position:
        return self.engine.position  # the game on the board: the engine searches it, commands change it

    # ----- the loop

    def run(self) -> None:
        """Reads commands until `quit` or the end of the input."""
        for raw in self.inp:
            line = clean_line(raw)
            if not line:
                continue
            reply, quit_ = self.handle(line)
            self.out.write(reply)
            self.out.flush()
            if quit_:
                return

    def handle(self, line: str) -> tuple[str, bool]:
        """(response text with its trailing empty line, whether to quit) for one cleaned command line."""
        words = [w for w in line.split(" ") if w]  # GTP separates by spaces only, not by any unicode space
        cid = ""
        if words and re.fullmatch(r"[0-9]+", words[0]):  # ASCII digits only: int("²") fails
            cid = words.pop(0)
        if not words:
            return f"?{cid} empty command\n\n", False
        name, args = words[0].lower(), words[1:]
        handler = self.handlers.get(name)
        if handler is None:
            return f"?{cid} unknown command\n\n", False
        try:
            result = handler(args)
        except (GTPError, ValueError) as e:
            return f"?{cid} {one_line(str(e))}\n\n", False
        except Exception as e:  # never let one command kill the engine
            return f"?{cid} {one_line(f'internal error: {type(e).__name__}: {e}')}\n\n", False
        sep = " " if result and not result.startswith("\n") else ""
        return f"={cid}{sep}{result}\n\n", name == "quit"

    # ----- commands

    def _need_go(self, command: str) -> None:
        if not self.engine.game.is_go:  # GTP's own game: boardsize, komi and final_score are Go's
            raise GTPError(f"{command} applies to Go only; this engine plays {self.engine.game.name}")

    def cmd_boardsize(self, args: list[str]) -> str:
        self._need_go("boardsize")
        if len(args) != 1 or not args[0].isdigit():
            raise GTPError("boardsize needs one integer")
        if int(args[0]) != self.engine.game.size:  # type: ignore[attr-defined]
            raise GTPError("unacceptable size")
        self.position.reset()
        return ""

    def cmd_clear_board(self, args: list[str]) -> str:
        self.position.reset()
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        self._need_go("komi")
        if len(args) != 1:
            raise GTPError("komi needs one number")
        try:
            komi = float(args[0])
        except ValueError:
            raise GTPError(f"komi is not a number: {args[0]!r}") from None
        self.position.set_komi(komi)
        return ""

    def _prepare_color(self, color: str) -> None:
        """Makes `color` the side to move (Go: the other side passes first)."""
        pos = self.position
        pos.check_running()
        if pos.to_move() == color:
            return
        if not pos.game.is_go:  # only Go has a pass
            raise GTPError(f"not {color}'s turn")
        pos.play("pass")
        if pos.is_over:
            pos.undo()
            raise GTPError(f"not {color}'s turn (a pass for the other side would end the game)")

    def cmd_play(self, args: list[str]) -> str:
        if len(args) != 2:
            raise GTPError("play needs a color and a move")
        color = parse_color(args[0])
        if self.engine.game.is_go and args[1].lower() == "resign":
            raise GTPError("resign is not a move here")
        pos = self.position
        before = len(pos.actions)
        self._prepare_color(color)
        try:
            pos.play(args[1])
        except ValueError as err:
            while len(pos.actions) > before:
                pos.undo()
            msg = str(err)
            raise GTPError("illegal move" if msg.startswith("illegal") else msg) from None
        return ""

    def _visit_budget(self, color: str) -> int:
        left = self.time_left.get(color)
        if left is None:
            return self.engine.visits
        seconds, stones = left
        if stones > 0:
            budget = seconds / stones
        else:
            budget = seconds / 20.0
        return self.engine.visits_for_time(max(budget * 0.8, 1e-3))

    def cmd_genmove(self, args: list[str]) -> str:
        if len(args) != 1:
            raise GTPError("genmove needs a color")
        color = parse_color(args[0])
        self._prepare_color(color)
        move, _ = self.engine.genmove(self._visit_budget(color))
        return move  # the game's notation: Go vertices are already upper case, and a pass is `pass`

    def cmd_undo(self, args: list[str]) -> str:
        if not self.position.actions:
            raise GTPError("cannot undo")
        self.position.undo()
        return ""

    def cmd_final_score(self, args: list[str]) -> str:
        self._need_go("final_score")
        return format_go_score(self.position.go_score())

    def cmd_time_settings(self, args: list[str]) -> str:
        try:
            main, byo, stones = float(args[0]), float(args[1]), int(args[2])
        except (IndexError, ValueError):
            raise GTPError("time_settings needs main_time byo_yomi_time byo_yomi_stones") from None
        if len(args) != 3 or not (0 <= main < math.inf and 0 <= byo < math.inf) or stones < 0:
            raise GTPError("time_settings needs three non-negative numbers")
        self.time_settings = (main, byo, stones)
        self.time_left.clear()
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        if len(args) != 3:
            raise GTPError("time_left needs color time stones")
        color = parse_color(args[0])
        try:
            seconds, stones = float(args[1]), int(args[2])
        except ValueError:
            raise GTPError("time_left needs a number of seconds and of stones") from None
        if not 0 <= seconds < math.inf or stones < 0:  # NaN fails the comparison too
            raise GTPError("time_left values must be finite and non-negative")
        self.time_left[color] = (seconds, stones)
        return ""

    def cmd_analyze(self, args: list[str]) -> str:
        pos, game = self.position, self.engine.game
        if args and re.fullmatch(r"[a-zA-Z]+", args[0]):
            if parse_color(args[0]) != pos.to_move():
                raise GTPError(f"not {args[0]}'s turn")
        pos.check_running()
        result = self.engine.search()
        lines = []
        for order, s in enumerate(st for st in result.stats if st.n > 0):
            winrate = int(round(10000 * (1 + s.q) / 2))
            pv = " ".join(game.move_to_gtp(m) for m in (s.pv or [s.move]))
            move = game.move_to_gtp(s.move)
            lines.append(f"info move {move} visits {s.n} winrate {winrate} prior {int(round(10000 * s.p))} "
                         f"lcb {winrate} order {order} pv {pv}")
        return "\n" + "\n".join(lines)


def main(args: argparse.Namespace, inp: TextIO | None = None, out: TextIO | None = None) -> int:
    load = start_engine(args, "gtp")  # answers the handshake while the network loads
    GTPEngine(load, *engine_streams(inp, out)).run()
    # At the end of input, a load still running is waited for, so a network that cannot load exits with status 2.
    return 2 if load.wait() else 0
