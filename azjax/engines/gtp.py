"""`azjax gtp`: a GTP version 2 engine for any game in the registry.

    azjax gtp --checkpoint DIR [--visits N] [--n_scl K] [--no-tree_reuse]

Commands: protocol_version, name, version, known_command, list_commands, boardsize, clear_board,
komi, play, genmove, undo, showboard, final_score, time_settings, time_left, quit, and the analysis
commands `lz-analyze` / `azjax-analyze` and `kata-analyze`.

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
  * Tree reuse (`--tree_reuse`, default on): `genmove` and the analyses continue the last search's tree when the
    position is its root or one or two moves below it (lc0, KataGo); under PUCT `--visits` counts the root's visits,
    the kept ones included; under Gumbel the root's visits start afresh over its children's kept subtrees.
  * `genmove` never resigns; after the game has ended it answers `? the game is over` (`... cut short by the
    648-move cap` when the move cap ended it: Go runs to 8 x size² moves, far past pgx's own cap of 2 x size²
    and any real game).
  * The network loads in the background (`azjax.engines.loading`): `protocol_version`, `name`, `version`,
    `known_command`, `list_commands` and `quit` answer at once; other commands wait for the load, and answer
    `? cannot load checkpoint ...` if it failed (also said once on stderr).
  * The search is compiled, and timed, before the first command that needs the engine is answered (at launch, in
    the background, `azjax.engines.engine.Engine.prepare`): no command compiles anything after it.
  * `time_settings` / `kgs-time_settings` (none, absolute, byoyomi, canadian) / `time_left` set the clock; under
    one, `genmove` searches the largest visit bucket (1, 2, 4, ... up to `--visits`) that the engine's measured speed
    fits in the move's budget (`azjax.engines.clock.gtp_budget`: main time over the moves expected plus a
    byo-yomi move's time, a Canadian period over its stones, a Japanese period; less `--move_overhead`). Before any
    `time_left` the clock is as the settings start it.
  * Analysis, as Leela Zero and KataGo stream it to Lizzie, Sabaki and other GUIs:
        lz-analyze [colour] [interval] [minmoves N] [maxmoves N]      (alias azjax-analyze)
        kata-analyze [colour] [interval] [minmoves N] [maxmoves N]
    The interval is in centiseconds (below 1 counts as 1), bare (`lz-analyze 50`, `lz-analyze b 50`) or keyed
    (`kata-analyze interval 50`); `colour`, if given, must be the side to move (`? not w's turn`). With an interval
    the answer streams:
        =
        info move D4 visits 12 winrate 5234 prior 1532 lcb 5234 order 0 pv D4 E5 info move C3 visits 4 ...
        info move D4 visits 24 winrate 5301 prior 1532 lcb 5301 order 0 pv D4 E5 C3 info move ...
        (... until the next command arrives; then the empty line that ends the response, and that command's answer)
    one line per interval, every visited move on it (most visited first, `order` 0, 1, ...), each line from a bigger
    tree: the analysis grows the tree in chunks of at most 64 visits (`Engine.grow`), up to 16 x `--visits` (at
    most 8192; without tree reuse, searches afresh of doubling size up to `--visits`), and each line shows the
    latest finished chunk. The first chunk's line is sent as soon as it ends, then at most one line per interval; a
    chunk cannot be interrupted, so the next command waits for the one in progress (at most one chunk). Once the
    tree cannot grow, the last line is sent again every interval until the next command.
    `lz-analyze` fields are Leela Zero's: winrate, prior and lcb in units of 1/10000, winrate = (1 + Q) / 2 of the
    player to move (lcb = winrate: no confidence bound is kept). `kata-analyze` uses KataGo's names and scales:
        info move D4 visits 12 utility 0.046800 winrate 0.523400 prior 0.153200 lcb 0.523400 utilityLcb 0.046800 ...
    (... order 0 pv D4 E5; utility = Q in [-1, 1], winrate, prior and lcb in [0, 1], 6 decimals; no score fields:
    the networks have no score head; KataGo's `ownership`/`pvVisits`/`rootInfo`-style true/false options are accepted
    and ignored). `minmoves N` lists unvisited moves too, by prior, up to N moves; `maxmoves N` lists at most N;
    `avoid`/`allow` are refused.
    Without an interval (or with interval 0) the command answers once, from one search at `--visits`, with one line
    per move, and the response ends at once (no need to interrupt it; scripts use this form).
  * What GUIs, GoGui's twogtp and server bridges send besides (Go only unless said):
        final_status_list alive|dead|seki   one chain a line; dead from the ownership head, if the network has
                                            one, else none (Tromp-Taylor counts every stone), seki always empty
                                            (`azjax.engines.final_status`)
        fixed_handicap N                    GTP's fixed stones (2 to 4 on 7x7, 2 to 9 on 9x9), on a new game
        place_free_handicap N               the fixed stones, then the engine's choice (a search each), 2 to size²-1
        set_free_handicap V1 V2 ...         the controller's stones; the three play them as Black moves with White
                                            passes between (`Position.place_stones` says why that is the same game)
        loadsgf FILE [MOVE_NUMBER]          size (must be the engine's), komi, setup stones and the moves before
                                            MOVE_NUMBER; answers the colour to move (`azjax.engines.sgf_io`)
        printsgf [FILE]                     the game so far as SGF, as the answer or into FILE
        lz-genmove_analyze [colour] [interval] ...   genmove that streams lz-analyze's info lines, then `play MOVE`
        kata-genmove_analyze [colour] [interval] ... the same with kata-analyze's fields (every game)
        kata-get-rules / kata-set-rules RULES   KataGo's rules JSON; only the rules played (`azjax.engines.kata_rules`)
        cputime                             the process's CPU seconds (every game)
    `lz-genmove_analyze` answers `=`, info lines and `play D4` and is not cut short by the next command: with an
    interval and a PUCT search that reuses its tree, a budget of 64 visits or more is searched in three growing
    searches (a quarter, half, all of it), each continuing the last one's tree, with a line after the first and the
    last and in between at most one per interval; otherwise one search and its line. The move played is the last
    search's, with genmove's visit budget (and time).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import math
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from azjax.engines.clock import TimeSettings, go_moves_left, gtp_budget
from azjax.engines.handicap import fixed_handicap_vertices, max_fixed_handicap, max_free_handicap
from azjax.engines.kata_rules import parse_rules, rules_json
from azjax.engines.loading import EngineLoad, LoadingFrontEnd, exit_status, one_line, sgf_io, start_engine, stone_status
from azjax.engines.records import format_go_score
from azjax.engines.streaming import LineReader

if TYPE_CHECKING:  # the engine module (flax, mctx) is imported by the background load, after the handshake
    from azjax.engines.engine import Engine
    from azjax.engines.lc0 import SearchResult

VERSION = "0.1.0"
COMMANDS = (
    "protocol_version", "name", "version", "known_command", "list_commands", "boardsize", "clear_board",
    "komi", "play", "genmove", "undo", "showboard", "final_score", "time_settings", "time_left", "quit",
    "lz-analyze", "azjax-analyze", "kata-analyze",
)  # fmt: skip
TIME_COMMANDS = ("kgs-time_settings",)  # KGS's clock command (Japanese byo-yomi): listed after the others
COMMANDS += TIME_COMMANDS
# The commands GUIs (Sabaki, Lizzie), GoGui's twogtp and server bridges send besides (issue 62).
COMMANDS += (
    "final_status_list", "fixed_handicap", "place_free_handicap", "set_free_handicap", "loadsgf", "printsgf",
    "lz-genmove_analyze", "kata-genmove_analyze", "kata-get-rules", "kata-set-rules", "cputime",
)  # fmt: skip
# lz-genmove_analyze with an interval splits a budget of at least this many visits into growing searches.
GENMOVE_ANALYZE_STAGED = 64
# kata-analyze options that ask for what these networks do not have (ownership, per-move PV visits, a root line):
# accepted with true or false, as GUIs send them, and ignored.
KATA_IGNORED_OPTIONS = frozenset(
    {"ownership", "ownershipstdev", "movesownership", "movesownershipstdev", "pvvisits", "pvedgevisits", "rootinfo"})


class GTPError(Exception):
    """A command that fails; the message follows `?`."""


@dataclasses.dataclass(frozen=True)
class AnalyzeRequest:
    """An analysis command's arguments (`lz-analyze b 50 maxmoves 10`).

    Attributes:
      kata: KataGo's field names and [0, 1] scales (`kata-analyze`), else Leela Zero's (`lz-analyze`).
      color: the colour asked for (must be the side to move), or None.
      interval: seconds between streamed lines; None answers once (no interval, or interval 0).
      min_moves: list unvisited moves too (by prior) up to this many moves; max_moves: list at most this many.
    """

    kata: bool
    color: str | None = None
    interval: float | None = None
    min_moves: int = 0
    max_moves: int | None = None


@dataclasses.dataclass(frozen=True)
class GenmoveAnalyzeRequest:
    """`lz-genmove_analyze` / `kata-genmove_analyze`, checked and accepted (the colour is to move): `handle` sends
    `=`, then `GTPEngine.genmove_with_analysis` streams the info lines, searches and plays the move."""

    analyze: AnalyzeRequest
    color: str


_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")  # ASCII digits only: float("٣") and float("nan") parse, GTP's don't


def _count(digits: str) -> int:
    """A move count; past 10**9 (int() refuses thousands of digits) any count lists every move."""
    return int(digits) if len(digits) <= 9 else 10**9


def parse_analyze(args: list[str], kata: bool) -> AnalyzeRequest:
    """`[colour] [interval] [interval N] [minmoves N] [maxmoves N]` (and KataGo's true/false options, ignored)."""
    color: str | None = None
    interval: float | None = None
    min_moves, max_moves = 0, None
    i = 0
    while i < len(args):
        word, key = args[i], args[i].lower()
        value = args[i + 1] if i + 1 < len(args) else None
        if i == 0 and key in ("b", "w", "black", "white"):
            color, i = parse_color(word), i + 1
        elif _NUMBER.fullmatch(word) and interval is None:
            interval, i = float(word) / 100, i + 1
        elif key in ("interval", "minmoves", "maxmoves"):
            if value is None or not _NUMBER.fullmatch(value) or (key != "interval" and "." in value):
                raise GTPError(f"{key} needs a number")
            if key == "interval":
                interval = float(value) / 100  # a huge one is inf: no line after the first until the searches stop
            elif key == "minmoves":
                min_moves = _count(value)
            else:
                max_moves = _count(value)
                if max_moves < 1:  # an empty info line would end the response early
                    raise GTPError("maxmoves must be at least 1")
            i += 2
        elif kata and key in KATA_IGNORED_OPTIONS:
            if value is None or value.lower() not in ("true", "false"):
                raise GTPError(f"{word} needs true or false")
            i += 2
        elif key in ("avoid", "allow"):
            raise GTPError(f"{key} is not supported")
        elif i == 0 and re.fullmatch(r"[a-zA-Z]+", word):
            parse_color(word)  # raises: `? invalid color 'x'`, as for play and genmove
        else:
            raise GTPError(f"cannot parse analyze argument {one_line(repr(word), 60)}")
    # interval 0: Leela Zero would ponder without a word; answering once is what a caller of interval 0 can use.
    # Below 1 cs (Leela Zero's unit), 1 cs: the repeated lines must not flood the GUI.
    return AnalyzeRequest(kata, color, max(interval, 0.01) if interval else None, min_moves, max_moves)


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
    ending the engine with a UnicodeDecodeError, and output never fails to encode.

    stdin is read through an unbuffered FileIO of its descriptor, not sys.stdin's BufferedReader: GTP reads its input
    in a daemon thread (`LineReader`), which after `quit` is still blocked in a read while a GUI keeps the pipe open,
    and a BufferedReader whose lock that thread holds makes the interpreter abort at exit ("could not acquire lock
    for <_io.BufferedReader name='<stdin>'> at interpreter shutdown"). A FileIO has no such lock."""
    if inp is None:
        try:
            raw: io.RawIOBase | io.BufferedIOBase = io.FileIO(sys.stdin.fileno(), "r", closefd=False)
        except (AttributeError, OSError, ValueError):  # a stdin without a descriptor (io.UnsupportedOperation)
            raw = sys.stdin.buffer
        inp = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")  # type: ignore[arg-type]
    if out is None:
        out = sys.stdout
        if isinstance(out, io.TextIOWrapper):
            out.reconfigure(errors="backslashreplace")
    return inp, out


class GTPEngine(LoadingFrontEnd):
    """A GTP server over text streams (stdin/stdout by default; tests pass StringIO).

    `engine` may still be loading (`EngineLoad`): the handshake commands answer at once, the others wait for it, and
    for its search to be compiled (`Engine.prepare`).
    """

    prepare_on_use = True

    def __init__(self, engine: Engine | EngineLoad, inp: TextIO | None = None, out: TextIO | None = None):
        super().__init__(engine)
        self.inp = inp if inp is not None else sys.stdin
        self.out = out if out is not None else sys.stdout
        self.time_settings: TimeSettings | None = None
        self.time_left: dict[str, tuple[float, int]] = {}
        self.move_overhead = self.load.defaults.move_overhead  # seconds (--move_overhead)
        self.reader: LineReader | None = None  # the input, read by `run` in a thread (a stream watches it)
        self.handlers: dict[str, Callable[[list[str]], str | AnalyzeRequest]] = {
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
            "kata-analyze": self.cmd_kata_analyze,
            "quit": lambda a: "",
        }
        self.handlers.update({
            "final_status_list": self.cmd_final_status_list,
            "fixed_handicap": self.cmd_fixed_handicap,
            "place_free_handicap": self.cmd_place_free_handicap,
            "set_free_handicap": self.cmd_set_free_handicap,
            "loadsgf": self.cmd_loadsgf,
            "printsgf": self.cmd_printsgf,
            "lz-genmove_analyze": lambda a: self._genmove_analyze(parse_analyze(a, kata=False)),
            "kata-genmove_analyze": lambda a: self._genmove_analyze(parse_analyze(a, kata=True)),
            "kata-get-rules": self.cmd_kata_get_rules,
            "kata-set-rules": self.cmd_kata_set_rules,
            "cputime": lambda a: f"{time.process_time():.3f}",
        })

        self.handlers["kgs-time_settings"] = self.cmd_kgs_time_settings

    # ----- the loop

    def run(self) -> None:
        """Reads commands until `quit` or the end of the input.

        The input is read in a thread (`LineReader`), so that a streamed analysis can see the next command arrive
        while it searches."""
        self.reader = LineReader(self.inp)
        while (raw := self.reader.get()) is not None:
            line = clean_line(raw)
            if not line:
                continue
            reply, quit_ = self.handle(line)
            self.out.write(reply)
            self.out.flush()
            if quit_:
                return

    def handle(self, line: str) -> tuple[str, bool]:
        """(response text with its trailing empty line, whether to quit) for one cleaned command line.

        A streamed analysis writes its `=` and info lines itself, until the next command is waiting, and returns only
        the empty line that ends its response."""
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
        if isinstance(result, AnalyzeRequest):  # checked and accepted: `=`, then the stream
            self.out.write(f"={cid}\n")
            self.out.flush()
            try:
                self.stream_analysis(result)
            except Exception as e:  # `=` is out, so no `?` can follow: the stream ends, and says why on stderr
                print(f"azjax gtp: analysis stopped: {one_line(f'{type(e).__name__}: {e}')}", file=sys.stderr,
                      flush=True)
            return "\n", False
        if isinstance(result, GenmoveAnalyzeRequest):  # `=`, the info lines, then `play MOVE`
            self.out.write(f"={cid}\n")
            self.out.flush()
            try:
                move = self.genmove_with_analysis(result)
            except Exception as e:  # as for a stream: no `?` can follow `=`; the answer ends without a move
                print(f"azjax gtp: {name} stopped: {one_line(f'{type(e).__name__}: {e}')}", file=sys.stderr,
                      flush=True)
                return "\n", False
            return f"play {move}\n\n", False
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
        self.engine.clear_tree()
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
        """The visits of `color`'s move: `--visits` without a clock, else the bucket that fits its budget."""
        engine = self.engine
        pos = self.position
        if engine.game.is_go:
            moves_left = go_moves_left(engine.game.size, len(pos.actions))  # type: ignore[attr-defined]
        else:  # the rest of a game of Connect Four (42 plies), or a chess game's usual 30 moves
            moves_left = max((42 - len(pos.actions)) / 2, 1.0) if engine.game.name == "connect_four" else 30.0
        budget = gtp_budget(self.time_settings, self.time_left.get(color), moves_left, self.move_overhead)
        return engine.visits_for_time(budget)

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
        self.time_settings = TimeSettings.from_gtp(main, byo, stones)
        self.time_left.clear()
        return ""

    def cmd_kgs_time_settings(self, args: list[str]) -> str:
        """KGS's `kgs-time_settings none | absolute MAIN | byoyomi MAIN PERIOD PERIODS | canadian MAIN PERIOD
        STONES` (seconds)."""
        try:
            self.time_settings = TimeSettings.from_kgs(args)
        except ValueError as e:
            raise GTPError(str(e)) from None
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

    def cmd_analyze(self, args: list[str]) -> str | AnalyzeRequest:
        return self._analyze(parse_analyze(args, kata=False))

    def cmd_kata_analyze(self, args: list[str]) -> str | AnalyzeRequest:
        return self._analyze(parse_analyze(args, kata=True))

    def _analyze(self, request: AnalyzeRequest) -> str | AnalyzeRequest:
        """The one answer of an analysis without an interval (one line per move); with one, the request, which
        `handle` streams. Everything that can refuse the command is checked here, before any `=` is written."""
        pos = self.position
        if request.color is not None and request.color != pos.to_move():
            raise GTPError(f"not {request.color}'s turn")
        pos.check_running()
        if request.interval is None or self.reader is None:  # `handle` called directly: no input to watch
            return "\n" + "\n".join(self.info_entries(self.engine.search(), request))
        return request

    def info_entries(self, result: SearchResult, request: AnalyzeRequest) -> list[str]:
        """One `info move ...` entry per listed move: the visited ones, most visited first (then, up to `minmoves`,
        unvisited ones by prior), at most `maxmoves`. Values from the player to move's view."""
        game = self.engine.game
        stats = [s for i, s in enumerate(result.stats) if s.n > 0 or i < request.min_moves]
        if request.max_moves is not None:
            stats = stats[: request.max_moves]
        entries = []
        for order, s in enumerate(stats):
            move = game.move_to_gtp(s.move)
            pv = " ".join(game.move_to_gtp(m) for m in (s.pv or [s.move]))
            winrate = (1 + s.q) / 2
            if request.kata:  # KataGo: utility = Q, winrate/prior/lcb in [0, 1] (kata-analyze's documented fields)
                entries.append(f"info move {move} visits {s.n} utility {s.q:.6f} winrate {winrate:.6f} "
                               f"prior {s.p:.6f} lcb {winrate:.6f} utilityLcb {s.q:.6f} order {order} pv {pv}")
            else:  # Leela Zero: winrate, prior and lcb in units of 1/10000
                wr = int(round(10000 * winrate))
                entries.append(f"info move {move} visits {s.n} winrate {wr} prior {int(round(10000 * s.p))} "
                               f"lcb {wr} order {order} pv {pv}")
        return entries

    def stream_analysis(self, request: AnalyzeRequest) -> None:
        """Streams info lines, one per interval, from searches of growing size, until a command (or the end of the
        input) is waiting; `=` has been sent, `handle` sends the closing empty line.

        Each line holds every listed move (`info move D4 ... pv D4 E5 info move C3 ...`): GUIs read one line as one
        snapshot of the analysis, as Leela Zero and KataGo send it."""
        assert self.reader is not None and request.interval is not None
        engine, reader, interval = self.engine, self.reader, request.interval
        latest: SearchResult | None = None
        next_send = time.monotonic()  # the first search's line goes out as soon as it ends

        def send(result: SearchResult) -> None:
            nonlocal next_send
            line = " ".join(self.info_entries(result, request))
            if line:  # (a search always visits a move; an empty line would end the response early)
                self.out.write(line + "\n")
                self.out.flush()
            next_send = time.monotonic() + interval

        while (grown := engine.grow()) is not None:  # one chunk; a failure ends the stream (`handle` says why)
            latest = grown
            if time.monotonic() >= next_send:
                send(latest)
            if reader.wait(0):  # the next command has come: it is answered after the search that was in progress
                return
        # The searches have stopped growing: the last one (if it could not be sent yet) when its interval is up,
        # then again every interval, so that a GUI sees the engine still there.
        while latest is not None and not reader.wait(next_send - time.monotonic()):
            send(latest)

    # ----- what GUIs, twogtp and server bridges send besides (issue 62)

    def cmd_final_status_list(self, args: list[str]) -> str:
        self._need_go("final_status_list")
        if len(args) != 1:
            raise GTPError("final_status_list needs one status: alive, dead or seki")
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GTPError(f"invalid status {one_line(repr(args[0]), 60)} (alive, dead or seki)")
        return "\n".join(" ".join(chain) for chain in stone_status(self.engine, status))

    def _handicap_stones(self, command: str, args: list[str]) -> int:
        """The number of stones of `fixed_handicap N` / `place_free_handicap N`, on a new game's empty board."""
        self._need_go(command)
        if len(args) != 1 or not re.fullmatch(r"[0-9]+", args[0]):
            raise GTPError(f"{command} needs the number of stones")
        self._need_empty_board()
        return _count(args[0])

    def _need_empty_board(self) -> None:
        if self.position.actions:
            raise GTPError("board not empty (handicap stones go on a new game: clear_board first)")

    def _place_handicap(self, vertices: list[str]) -> str:
        self.position.place_stones(vertices)
        self.engine.clear_tree()
        return " ".join(vertices)

    def cmd_fixed_handicap(self, args: list[str]) -> str:
        stones = self._handicap_stones("fixed_handicap", args)
        try:
            vertices = fixed_handicap_vertices(self.engine.game.size, stones)  # type: ignore[attr-defined]
        except ValueError:
            raise GTPError(f"invalid number of stones: {stones} (fixed handicaps on "
                           f"{self.engine.game.size}x{self.engine.game.size}: 2 to "  # type: ignore[attr-defined]
                           f"{max_fixed_handicap(self.engine.game.size)})") from None  # type: ignore[attr-defined]
        return self._place_handicap(vertices)

    def cmd_place_free_handicap(self, args: list[str]) -> str:
        """The fixed stones as far as they go, then each further stone where a search for Black (White passing)
        puts its most visited move; fewer stones if Black has no legal point left."""
        stones = self._handicap_stones("place_free_handicap", args)
        size = self.engine.game.size  # type: ignore[attr-defined]
        if not 2 <= stones <= max_free_handicap(size):
            raise GTPError(f"invalid number of stones: {stones} (2 to {max_free_handicap(size)})")
        fixed = min(stones, max_fixed_handicap(size))
        vertices = fixed_handicap_vertices(size, fixed) if fixed >= 2 else []
        pos = self.position
        try:
            while len(vertices) < stones:
                pos.reset()
                pos.place_stones(vertices, to_move="b")
                result = self.engine.search()
                choice = next((s.move for s in result.stats if s.move != "pass"), None)
                if choice is None:
                    break
                vertices.append(choice)
        finally:
            pos.reset()
            self.engine.clear_tree()
        return self._place_handicap(vertices)

    def cmd_set_free_handicap(self, args: list[str]) -> str:
        self._need_go("set_free_handicap")
        self._need_empty_board()
        size = self.engine.game.size  # type: ignore[attr-defined]
        if not 2 <= len(args) <= max_free_handicap(size):
            raise GTPError(f"bad vertex list: 2 to {max_free_handicap(size)} stones, not {len(args)}")
        try:
            self._place_handicap(args)
        except ValueError as err:
            raise GTPError(f"bad vertex list: {err}") from None
        return ""

    def cmd_loadsgf(self, args: list[str]) -> str:
        self._need_go("loadsgf")
        if not 1 <= len(args) <= 2:
            raise GTPError("loadsgf needs a file name and, optionally, a move number")
        move_number = None
        if len(args) == 2:
            if not re.fullmatch(r"[0-9]+", args[1]) or _count(args[1]) < 1:
                raise GTPError(f"the move number must be a positive integer, not {one_line(repr(args[1]), 60)}")
            move_number = _count(args[1])
        load_sgf, read_sgf = sgf_io().load_sgf, sgf_io().read_sgf
        name = one_line(repr(args[0]), 120)
        try:
            record = read_sgf(Path(args[0]).read_bytes())
        except OSError as err:
            raise GTPError(f"cannot load file {name}: {err.strerror or err}") from None
        except ValueError as err:
            raise GTPError(f"cannot load file {name}: {err}") from None
        load_sgf(self.position, record, move_number)  # the position as it was if this fails
        self.engine.clear_tree()
        return "black" if self.position.to_move() == "b" else "white"

    def cmd_printsgf(self, args: list[str]) -> str:
        self._need_go("printsgf")
        if len(args) > 1:
            raise GTPError("printsgf takes at most a file name")
        data = sgf_io().position_sgf(self.position)
        if args:
            try:
                Path(args[0]).write_bytes(data)
            except OSError as err:
                raise GTPError(f"cannot write file {one_line(repr(args[0]), 120)}: {err.strerror or err}") from None
            return ""
        return "\n".join(line for line in data.decode("utf-8").splitlines() if line.strip())

    def _genmove_analyze(self, request: AnalyzeRequest) -> GenmoveAnalyzeRequest:
        """Checks the command and makes the colour the side to move (as genmove does) before `=` is sent."""
        color = request.color or self.position.to_move()
        self._prepare_color(color)
        return GenmoveAnalyzeRequest(request, color)

    def genmove_with_analysis(self, command: GenmoveAnalyzeRequest) -> str:
        """Searches with genmove's budget, writing info lines (the module's docstring says when), plays the last
        search's move and returns it."""
        engine, request = self.engine, command.analyze
        budget = self._visit_budget(command.color)
        plan = [budget]
        if (request.interval is not None and budget >= GENMOVE_ANALYZE_STAGED and engine.reuses_trees
                and engine.spec().kind == "puct"):
            plan = [budget // 4, budget // 2, budget]
        sent: float | None = None
        for i, visits in enumerate(plan):
            result = engine.search(visits)
            now = time.monotonic()
            if i == len(plan) - 1 or sent is None or (request.interval is not None and now - sent >= request.interval):
                line = " ".join(self.info_entries(result, request))
                if line:
                    self.out.write(line + "\n")
                    self.out.flush()
                sent = now
        self.position.play_action(result.best_action)
        return result.best_move

    def cmd_kata_get_rules(self, args: list[str]) -> str:
        self._need_go("kata-get-rules")
        if args:
            raise GTPError("kata-get-rules takes no arguments")
        return rules_json(self.position.komi)

    def cmd_kata_set_rules(self, args: list[str]) -> str:
        self._need_go("kata-set-rules")
        komi = parse_rules(" ".join(args))
        if komi is not None:
            self.position.set_komi(komi)
        return ""

def main(args: argparse.Namespace, inp: TextIO | None = None, out: TextIO | None = None) -> int:
    load = start_engine(args, "gtp")  # answers the handshake while the network loads
    GTPEngine(load, *engine_streams(inp, out)).run()
    # At the end of input, a load still running is waited for, so a network that cannot load exits with status 2.
    return exit_status(load, process=inp is None and out is None)
