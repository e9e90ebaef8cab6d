"""Fuzzing `azjax gtp` and `azjax uci` through a pipe, as a GUI drives them.

    report = fuzz_gtp(["python", "-m", "azjax.cli", "gtp", "--checkpoint", DIR], "go_9x9", lines=1000)
    report = fuzz_uci(["python", "-m", "azjax.cli", "uci", "--checkpoint", DIR], lines=1000)

Each fuzz line (random bytes, unicode, overlong lines, huge numbers, commands with random arguments,
commands out of order, whole games followed by moves after the end, ...) is written to the engine's
stdin as bytes, followed by a probe the driver knows the answer to (GTP: `ID name`, UCI: `isready`).
Everything the engine prints before the probe's answer is the answer to the fuzz line, so the driver
needs no model of which lines deserve an answer, and a missing probe answer within the timeout is a
hang. Checked per line:

  * GTP: at most one reply, exactly one unless the line is empty or a comment after the spec's
    preprocessing (control characters dropped, `#` comments cut, spaces and tabs stripped); every reply
    `=`/`?`, the command's id echoed, no empty line inside, valid UTF-8 without control characters.
  * UCI: every output line starts with a UCI keyword and is valid UTF-8 without control characters;
    every `go` (the driver sends `stop` after `go infinite` / `go ponder`) is answered by either
    `bestmove M` with M legal in the position the engine reports with `d` (`0000` only when the game
    is over), or an `info string error` and no bestmove.
  * Both: the process never exits (a crash is counted and the engine restarted).

Subprocesses are read by threads (select + readline would lose lines already buffered).
"""

from __future__ import annotations

import collections
import dataclasses
import queue
import random
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from azjax.build import game_named, make_network
from azjax.checkpoint import save_config, save_params
from azjax.config import Config

PROBE_ID = 987654321  # GTP id of the probe; the fuzz never sends it
GTP_COMMANDS = (
    "protocol_version", "name", "version", "known_command", "list_commands", "boardsize", "clear_board",
    "komi", "play", "genmove", "undo", "showboard", "final_score", "time_settings", "time_left",
    "lz-analyze", "azjax-analyze", "kata-analyze",
)  # fmt: skip
UCI_KEYWORDS = ("id", "uciok", "readyok", "bestmove", "copyprotection", "registration", "info", "option")
HUGE = ["9" * 30, "-" + "9" * 30, "9" * 5000, "1e999", "-1e999", "nan", "inf", "-inf", "1e-999", "0x10",
        "2147483648", "-2147483649", "18446744073709551616", "1_000", "٣", "²", "0", "-0", "-1", "3.5", ""]
WORDS = ["", "b", "w", "black", "white", "B", "W", "x", "pass", "PASS", "resign", "none", "moves", "startpos",
         "fen", "name", "value", "true", "false", "é", "黑", "🀄", "\u202e", "\ufeff", "\u2028", "\x85", "\x00",
         "\t", "\x0b", "#", "= 1", "?", "quitx", "genmove", "play"]


class EngineExited(Exception):
    """The engine process ended (a crash, unless it was told to quit)."""


class PipeEngine:
    """An engine subprocess with line-reading threads on stdout and stderr."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None):
        self.argv = list(argv)
        self.env, self.cwd = env, cwd  # to start it again after a crash
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # end of output

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise EngineExited(f"the engine closed its input (exit code {self.proc.poll()})") from None

    def read_line(self, timeout: float) -> bytes | None:
        """The next output line (with its newline); None on timeout; EngineExited at the end of output."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            self.lines.put(None)  # stay at the end
            raise EngineExited(f"the engine exited (code {self.proc.wait()}): {' | '.join(self.stderr_tail)}")
        return line

    def close(self, timeout: float = 10.0) -> int | None:
        """Closes stdin (a GUI going away) and waits; kills the process if it does not end."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


@dataclasses.dataclass
class FuzzReport:
    engine: str
    game: str
    lines_sent: int = 0
    crashes: int = 0
    hangs: int = 0
    malformed_replies: int = 0
    go_commands: int = 0
    bestmoves: int = 0
    go_errors: int = 0
    seconds: float = 0.0
    problems: list[str] = dataclasses.field(default_factory=list)  # the first few, for the report

    def problem(self, kind: str, line: bytes, detail: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(f"{kind}: line {line[:120]!r}: {detail[:400]}")

    def malformed(self, line: bytes, detail: str) -> None:
        self.malformed_replies += 1
        self.problem("malformed", line, detail)

    def progress(self) -> str:
        """Lines sent and problems so far (UCI: and bestmoves), for the progress log."""
        text = f"{self.lines_sent} lines, {self.crashes} crashes, {self.hangs} hangs, {self.malformed_replies} "
        text += "malformed"
        return text + (f", {self.bestmoves} bestmoves" if self.engine == "uci" else "")

    @property
    def ok(self) -> bool:
        return self.crashes == 0 and self.hangs == 0 and self.malformed_replies == 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- a model to fuzz


def make_untrained_model(path: str | Any, game: str, search: str = "gumbel", visits: int = 4) -> str:
    """An exported model directory (config + random 1x8 weights) for `game`: engines start on it in
    seconds, and nothing depends on the trained models under results/."""
    from pathlib import Path

    import jax
    import jax.numpy as jnp
    import numpy as np

    config = Config(game=game, num_blocks=1, num_channels=8, eval_simulations=visits, search=search)
    g = game_named(game)
    net = make_network(config, g)
    # Shapes from eval_shape: no XLA compile of the initialiser.
    shapes = jax.eval_shape(net.init, jax.random.key(1), jnp.zeros((1, *g.observation_shape)))
    rng = np.random.default_rng(1)

    def fill(p: Any, x: Any) -> np.ndarray:
        name = str(p[-1])
        if "scale" in name:
            return np.ones(x.shape, x.dtype)
        if "bias" in name:
            return np.zeros(x.shape, x.dtype)
        return (rng.standard_normal(x.shape) / np.sqrt(int(np.prod(x.shape[:-1])) or 1)).astype(x.dtype)

    path = Path(path)
    save_config(path, config)
    save_params(path, jax.tree_util.tree_map_with_path(fill, shapes))
    return str(path)


# ---------------------------------------------------------------- input generators


def _random_bytes(rng: random.Random) -> bytes:
    # No CR/LF: the line terminator is chosen separately.
    return bytes(b for b in rng.randbytes(rng.randrange(0, 120)) if b not in (10, 13))


def _random_unicode(rng: random.Random) -> bytes:
    pools = [(0x20, 0x7E), (0x80, 0x2FF), (0x370, 0x3FF), (0x590, 0x6FF), (0x2000, 0x206F), (0x4E00, 0x4F00),
             (0x1F300, 0x1F6FF), (0xFFF0, 0xFFFF), (0xD800, 0xDFFF)]
    chars = []
    for _ in range(rng.randrange(1, 40)):
        lo, hi = rng.choice(pools)
        chars.append(chr(rng.randint(lo, hi)))
    text = "".join(chars).replace("\n", " ").replace("\r", " ")
    return text.encode("utf-8", "surrogatepass")  # lone surrogates: invalid UTF-8 on purpose


def _number(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(HUGE)
    return str(rng.choice([rng.randint(-5, 40), rng.randint(-(10**6), 10**6)]))


def _overlong(rng: random.Random, prefix: str) -> bytes:
    size = rng.choice([5_000, 70_000, 1_000_000])
    filler = rng.choice(["a", "9", " ", "e2e4 ", "D4 ", "\t", "é"])
    return (prefix + filler * (size // len(filler))).encode()


def _terminated(rng: random.Random, line: bytes) -> bytes:
    return line + (b"\r\n" if rng.random() < 0.1 else b"\n")


GO_VERTICES = {size: [c + str(r) for c in "ABCDEFGHJKLMNOPQRST"[:size] for r in range(1, size + 1)]
               for size in (7, 9)}


def _gtp_moves(game: str, rng: random.Random) -> str:
    if game == "connect_four":
        return rng.choice([str(rng.randint(1, 7))] * 6 + ["0", "8", "-1", "1.5", "a", "pass", "٣"])
    if game.startswith("go_"):
        size = int(game[3])
        pool = GO_VERTICES[size]
        return rng.choice([rng.choice(pool), rng.choice(pool).lower(), "pass", "PASS", "resign", "I5", "Z9",
                           "A0", "A" + str(size + 1), "D4D4", "D" + "9" * 30, "DIX"])
    files, ranks = "abcdefgh", "12345678"
    sq = lambda: rng.choice(files) + rng.choice(ranks)  # noqa: E731
    return rng.choice([sq() + sq(), sq() + sq() + rng.choice("qrbnkx"), "e2e4", "e7e5", "g1f3", "0000", "e1g1",
                       "O-O", "Nf3", "e2e9", "i2i4"])


def _gtp_game_lines(game: str, rng: random.Random) -> list[str]:
    """A whole game of legal-looking moves (random legal ones where the driver can tell), then moves after the end."""
    lines = ["clear_board"]
    if game == "connect_four":
        heights = [0] * 7
        color = "b"
        for _ in range(rng.randint(7, 42)):
            col = rng.choice([c for c in range(7) if heights[c] < 6] or [0])
            heights[col] += 1
            lines.append(f"play {color} {col + 1}")
            color = "w" if color == "b" else "b"
    elif game.startswith("go_"):
        color = "b"
        for _ in range(rng.randint(2, 30)):
            lines.append(f"play {color} {rng.choice(GO_VERTICES[int(game[3])])}")
            color = "w" if color == "b" else "b"
        lines += [f"play {color} pass", f"play {'w' if color == 'b' else 'b'} pass"]
    else:
        import chess

        board = chess.Board()
        while not board.is_game_over() and board.ply() < rng.choice([20, 200, 600]):
            move = rng.choice(list(board.legal_moves))
            lines.append(f"play {'w' if board.turn else 'b'} {move.uci()}")
            board.push(move)
    lines += ["genmove b", "genmove w", f"play b {_gtp_moves(game, rng)}", "final_score", "undo", "showboard"]
    return lines


def gtp_fuzz_lines(game: str, rng: random.Random, quick: bool = False) -> Iterator[bytes]:
    """Endless fuzz lines (terminator included) for a GTP engine playing `game`; never `quit`.
    `quick`: no `time_left` small enough to shrink a search below `--visits` (a new size compiles)."""
    while True:
        kind = rng.random()
        if kind < 0.10:
            lines = [_random_bytes(rng)]
        elif kind < 0.18:
            lines = [_random_unicode(rng)]
        elif kind < 0.19:
            lines = [_overlong(rng, rng.choice(["", "play b ", "komi ", "name ", "# "]))]
        elif kind < 0.24:
            lines = [rng.choice(["", " ", "\t", "# comment", "\x00\x01", "\x7f", "  # play b 1", "\u3000",
                                 "\x85", "\ufeff"]).encode()]
        elif kind < 0.27:
            lines = [s.encode() for s in _gtp_game_lines(game, rng)]
        else:
            cmd = rng.choice(GTP_COMMANDS + ("PLAY", "Genmove", "foo", "quit_", "kgs-genmove_cleanup", "help"))
            if rng.random() < 0.15:
                cmd = rng.choice(["play", "genmove", "komi", "undo", "time_left", "boardsize"])
            nargs = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
            args = []
            for i in range(nargs):
                r = rng.random()
                if cmd.lower() in ("play", "genmove", "lz-analyze", "kata-analyze") and i == 0 and r < 0.8:
                    args.append(rng.choice(["b", "w", "black", "white", "B", "WHITE", "x", "bw"]))
                elif cmd.lower() == "play" and i == 1 and r < 0.8:
                    args.append(_gtp_moves(game, rng))
                elif r < 0.5:
                    args.append(_number(rng))
                else:
                    args.append(rng.choice(WORDS + [_gtp_moves(game, rng)]))
            if quick and cmd == "time_left":
                args = [rng.choice(["b", "w", "x"]), rng.choice(["100000", "x", "-1", "nan", "1e999"]), "0"][:nargs]
            text = " ".join([cmd, *args])
            if rng.random() < 0.2:
                text = rng.choice([str(rng.randint(0, 999)), "9" * 40, "٣", "-1", "01"]) + " " + text
            if rng.random() < 0.05:
                text = text.replace(" ", "\t")
            if rng.random() < 0.05:
                text += " # trailing comment"
            lines = [text.encode("utf-8", "surrogatepass")]
        for line in lines:
            if _gtp_clean(line.decode("utf-8", "replace")).split()[:2] in (["quit"], [str(PROBE_ID)]) or \
                    re.fullmatch(r"\d+ quit", _gtp_clean(line.decode("utf-8", "replace"))):
                continue
            yield _terminated(rng, line)


def _gtp_clean(line: str) -> str:
    """The GTP spec's preprocessing (section 3.1): control characters except HT/LF dropped, `#` comments
    cut, HT to space, leading/trailing spaces stripped (C1 controls U+0080-U+009F count as control characters)."""
    line = "".join(ch for ch in line if ch in "\t\n" or not (ord(ch) < 32 or 127 <= ord(ch) < 160))
    return line.split("#", 1)[0].replace("\t", " ").strip(" \n")


def _uci_position_line(rng: random.Random, fens: list[str]) -> str:
    import chess

    kind = rng.random()
    if kind < 0.5:
        board = chess.Board()
        base = "position startpos"
    else:
        fen = rng.choice(fens)
        board = chess.Board(fen)
        base = f"position fen {fen}"
    moves = []
    plies = rng.choice([0, 1, 2, 5, 20, 80, 300])
    while len(moves) < plies and not board.is_game_over():
        move = rng.choice(list(board.legal_moves))
        moves.append(move.uci())
        board.push(move)
    r = rng.random()
    if r < 0.15:
        moves.append(_gtp_moves("chess", rng))  # an illegal or malformed move (or after the end)
    elif r < 0.2 and board.is_game_over():
        moves.append("e2e4")
    elif r < 0.25 and moves:
        moves.insert(rng.randrange(len(moves)), rng.choice(["e2e5", "xx", "0000", "E2E4"]))
    if moves or rng.random() < 0.3:
        return base + " moves " + " ".join(moves)
    return base


def _uci_go_line(rng: random.Random, quick: bool) -> str:
    """`go` with random limits. `quick` keeps every search at the `Visits` option (4): no small time
    budgets, no nodes above it (each new search size costs an XLA compile, ~20-80 s on a CPU)."""
    words = ["go"]
    limits = ["nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo", "depth", "mate"]
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5])):
        r = rng.random()
        if r < 0.07:
            words.append(rng.choice(["infinite", "ponder"]))
        elif r < 0.1:
            words.append(rng.choice(["searchmoves", "sideways", "NODES", ""]))
        else:
            limit = rng.choice(limits)
            if quick:
                small = {"nodes": str(rng.randint(1, 4)), "movetime": str(rng.randint(2000, 10**7))}
                value = rng.choice([small.get(limit, str(rng.randint(10**5, 10**7))), "x", "1.5", "", "-"])
            elif limit == "nodes":
                value = rng.choice([str(rng.choice([1, 2, 3, 4, 5, 8, 9, 16])), _number(rng)])
            elif limit in ("wtime", "btime", "movetime"):
                value = rng.choice([str(rng.randint(0, 2000)), str(rng.randint(1, 10**7)), _number(rng)])
            else:
                value = rng.choice([str(rng.randint(0, 60)), _number(rng)])
            words += [limit, value] if rng.random() < 0.95 else [limit]
    return " ".join(words)


def uci_fuzz_lines(rng: random.Random, fens: list[str], quick: bool = False) -> Iterator[bytes]:
    """Endless fuzz lines (terminator included) for a UCI engine; never `quit`.

    `fens`: the pool of legal positions used by `position fen` (a new FEN costs the engine seconds).
    `quick`: searches stay at 4 visits (see `_uci_go_line`)."""
    while True:
        kind = rng.random()
        if kind < 0.08:
            line = _random_bytes(rng)
        elif kind < 0.14:
            line = _random_unicode(rng)
        elif kind < 0.15:
            line = _overlong(rng, rng.choice(["", "position startpos moves ", "go nodes ", "setoption name "]))
        elif kind < 0.40:
            line = _uci_position_line(rng, fens).encode()
        elif kind < 0.60:
            line = _uci_go_line(rng, quick).encode()
        elif kind < 0.70:
            line = rng.choice([
                "position fen " + rng.choice(["garbage", "8/8/8/8/8/8/8/8 w - - 0 1", "rnbqkbnr/pppppppp w",
                                              fens[0].replace("w", "x", 1), "k7/8/8/8/8/8/8/7K w - - 0 1 extra"]),
                "position", "position moves e2e4", "position startpos e2e4", "position fen", "position startpos moves",
            ]).encode()
        elif kind < 0.80:
            name = rng.choice(["Visits", "NScl", "VerboseMoveStats", "Hash", "Threads", "visits", "", "Multi PV"])
            # Valid visit counts stay small powers of two (few compiles); the rest are refused.
            # NScl too changes the compiled search, so its valid values are few as well.
            valid = {"Visits": ["4", *([] if quick else ["1", "2", "8"])], "NScl": ["0", *([] if quick else ["2"])]}
            value = rng.choice(["true", "false", "-1", "x", "", "1e999", "nan", "9" * 30, "9" * 5000, "2147483648",
                                "3.5", "8193", *valid.get(name, ["4", "0"])])
            line = rng.choice([f"setoption name {name} value {value}", f"setoption name {name}", "setoption",
                               f"setoption {name} {value}", f"setoption name value {value}"]).encode()
        else:
            line = rng.choice(["uci", "isready", "ucinewgame", "stop", "ponderhit", "d", "debug on", "debug",
                               "register later", "go", "position startpos", "Go", "STOP", "xyzzy", "uciok",
                               "bestmove e2e4", "info depth 1"]).encode()
        words = line.decode("utf-8", "replace").split()
        if words[:1] == ["quit"]:
            continue
        yield _terminated(rng, line)


# ---------------------------------------------------------------- reply checks

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _decode_output(raw: bytes) -> tuple[str, str | None]:
    """(text without its newline, a problem or None)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return raw.decode("utf-8", "replace").rstrip("\n"), f"invalid UTF-8 in the output: {e}"
    if not text.endswith("\n"):
        return text, "output line without a newline"
    text = text[:-1]
    if CONTROL_CHARS.search(text):
        return text, f"control character in the output: {text[:200]!r}"
    return text, None


def check_gtp_reply(reply: list[str], command_id: str | None) -> str | None:
    """None if `reply` (its lines, without the closing empty line) is a well-formed GTP response."""
    if not reply:
        return "empty reply"
    m = re.fullmatch(r"([=?])(\d*)(?: (.*))?", reply[0])
    if m is None:
        return f"first line is not '=...' or '?...': {reply[0][:200]!r}"
    if (command_id or "") != m.group(2):
        return f"id {m.group(2)!r} echoed for command id {command_id!r}"
    if any(line == "" for line in reply):
        return "empty line inside the reply"
    return None


# ---------------------------------------------------------------- drivers


def _restart(engine: PipeEngine, report: FuzzReport, line: bytes, failure: Exception, timeout: float) -> PipeEngine:
    """Counts `line`'s hang (TimeoutError: the engine is killed) or crash (EngineExited) in `report` and
    starts the engine again, so the fuzzing goes on."""
    if isinstance(failure, TimeoutError):
        report.hangs += 1
        report.problem("hang", line, f"{failure} within {timeout:.0f} s")
        engine.proc.kill()
    else:
        report.crashes += 1
        report.problem("crash", line, str(failure))
    engine.close(timeout=5)
    return PipeEngine(engine.argv, env=engine.env, cwd=engine.cwd)


def _fuzz_session(argv: Sequence[str], env: dict[str, str] | None, report: FuzzReport, source: Iterator[bytes],
                  lines: int, exchange: Callable[[PipeEngine, bytes], None], goodbye: Callable[[PipeEngine], None],
                  timeout: float, log: Any, label: str) -> FuzzReport:
    """Starts the engine, sends `lines` lines from `source`, each through `exchange` (which checks the replies
    into `report` and raises TimeoutError or EngineExited), restarting the engine after a hang or crash; then
    `goodbye`."""
    t0 = time.perf_counter()
    engine = PipeEngine(argv, env=env)
    try:
        while report.lines_sent < lines:
            line = next(source)
            report.lines_sent += 1
            try:
                exchange(engine, line)
            except (TimeoutError, EngineExited) as e:
                engine = _restart(engine, report, line, e, timeout)
            if log is not None and report.lines_sent % 500 == 0:
                log(f"{label}: {report.progress()}")
        goodbye(engine)
    finally:
        engine.close(timeout=5)
    report.seconds = round(time.perf_counter() - t0, 1)
    return report


def _output_lines(engine: PipeEngine, timeout: float) -> Iterator[tuple[bytes, str, str | None]]:
    """The engine's output lines (raw, decoded text, any encoding problem) until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while (raw := engine.read_line(max(deadline - time.monotonic(), 0.01))) is not None:
        yield raw, *_decode_output(raw)


def _read_gtp_reply(engine: PipeEngine, timeout: float) -> tuple[list[str], str | None] | None:
    """One reply (its lines) and any encoding problem; None on timeout."""
    lines: list[str] = []
    problem = None
    for raw, text, p in _output_lines(engine, timeout):
        problem = problem or p
        if text == "" and raw.endswith(b"\n"):
            if lines:
                return lines, problem
            continue  # a stray empty line before a reply
        lines.append(text)
    return None


def fuzz_gtp(argv: Sequence[str], game: str, lines: int, seed: int = 0, timeout: float = 120.0,
             env: dict[str, str] | None = None, log: Any = None, quick: bool = False) -> FuzzReport:
    """Sends `lines` fuzz lines to the GTP engine started by `argv` (a checkpoint playing `game`)."""
    report = FuzzReport(engine="gtp", game=game)
    source = gtp_fuzz_lines(game, random.Random(seed), quick)
    probe = f"{PROBE_ID} name\n".encode()

    def exchange(engine: PipeEngine, line: bytes) -> None:
        cleaned = _gtp_clean(line.decode("utf-8", "replace"))
        words = cleaned.split(" ")
        command_id = words[0] if words and re.fullmatch(r"[0-9]+", words[0]) else None
        engine.send(line + probe)
        replies = []
        while True:
            got = _read_gtp_reply(engine, timeout)
            if got is None:
                raise TimeoutError("no reply")
            reply, problem = got
            if reply == [f"={PROBE_ID} azjax"]:
                break
            replies.append(reply)
            bad = problem or check_gtp_reply(reply, command_id)
            if bad:
                report.malformed(line, f"{bad}; reply {reply[:3]!r}")
        if len(replies) > 1 or (cleaned and not replies):
            report.malformed(line, f"{len(replies)} replies to one line")

    def goodbye(engine: PipeEngine) -> None:
        # A GUI's goodbye: `quit` answers `=` and the engine exits with status 0.
        engine.send(b"quit\n")
        got = _read_gtp_reply(engine, timeout)
        code = engine.close(timeout=timeout)
        if got is None or got[0] != ["="] or code != 0:
            report.malformed(b"quit", f"reply {got!r}, exit code {code}")

    return _fuzz_session(argv, env, report, source, lines, exchange, goodbye, timeout, log, label=f"gtp {game}")


def _read_until(engine: PipeEngine, done: Any, timeout: float, report: FuzzReport, line: bytes) -> list[str] | None:
    """Output lines up to and including the first for which `done(text)` holds; None on timeout.
    Malformed lines are counted in `report`."""
    out: list[str] = []
    for _, text, problem in _output_lines(engine, timeout):
        if problem is None and text.split(" ", 1)[0] not in UCI_KEYWORDS:
            problem = f"not a UCI output line: {text[:200]!r}"
        if problem:
            report.malformed(line, problem)
        out.append(text)
        if done(text):
            return out
    return None


def _check_bestmove(text: str, fen: str | None) -> str | None:
    """None if `bestmove M [ponder P]` is legal in `fen` (0000 only when the game is over)."""
    import chess

    words = text.split()
    if len(words) not in (2, 4) or (len(words) == 4 and words[2] != "ponder"):
        return f"malformed bestmove line {text!r}"
    if fen is None:
        return "no FEN reported by `d` before `go`"
    board = chess.Board(fen)
    if words[1] == "0000":
        over = board.is_game_over(claim_draw=True) or board.halfmove_clock >= 100
        return None if over else f"bestmove 0000 in a live position {fen}"
    try:
        move = chess.Move.from_uci(words[1])
    except ValueError:
        return f"bestmove {words[1]!r} is not a UCI move"
    if move not in board.legal_moves:
        return f"bestmove {words[1]} is illegal in {fen}"
    return None


def fuzz_uci(argv: Sequence[str], lines: int, seed: int = 0, timeout: float = 120.0,
             env: dict[str, str] | None = None, log: Any = None, fens: int = 12, quick: bool = False) -> FuzzReport:
    """Sends `lines` fuzz lines to the UCI engine started by `argv` (a chess model searching 4 visits).
    `quick`: every search stays at 4 visits, and `stop` follows `go infinite` at once."""
    import chess

    report = FuzzReport(engine="uci", game="chess")
    rng = random.Random(seed)
    pool = []
    for _ in range(fens):  # legal positions reached by random play
        board = chess.Board()
        for _ in range(rng.randint(1, 60)):
            if board.is_game_over():
                break
            board.push(rng.choice(list(board.legal_moves)))
        pool.append(board.fen())
    source = uci_fuzz_lines(rng, pool, quick)

    def ready(text: str) -> bool:
        return text == "readyok"

    def exchange(engine: PipeEngine, line: bytes) -> None:
        words = line.decode("utf-8", "replace").split()
        fen = None
        if words[:1] == ["go"]:
            report.go_commands += 1
            engine.send(b"d\nisready\n")
            out = _read_until(engine, ready, timeout, report, line)
            if out is None:
                raise TimeoutError("no readyok after d")
            fen = next((t[len("info string fen "):] for t in out if t.startswith("info string fen ")), None)
            if fen is None:
                report.problem("note", line, f"`d` printed {out[-4:]!r}")
            engine.send(line)
            if "infinite" in words or "ponder" in words:
                time.sleep(0.0 if quick else rng.choice([0.0, 0.01, 0.2]))
                engine.send(b"stop\n" if rng.random() < 0.8 else b"ponderhit\n")
            out = _read_until(engine, lambda t: t.startswith("bestmove") or
                              t.startswith("info string error"), timeout, report, line)
            if out is None:
                raise TimeoutError("go was answered neither by bestmove nor by an error")
            if out[-1].startswith("bestmove"):
                report.bestmoves += 1
                bad = _check_bestmove(out[-1], fen)
                if bad:
                    report.malformed(line, bad)
            else:
                report.go_errors += 1
            engine.send(b"isready\n")
        else:
            engine.send(line + b"isready\n")
        out = _read_until(engine, ready, timeout, report, line)
        if out is not None and words[:1] == ["isready"]:  # the fuzz line's own readyok came first
            more = _read_until(engine, ready, timeout, report, line)
            out = None if more is None else out + more
        if out is None:
            raise TimeoutError("no readyok")
        stray = [t for t in out if t.startswith("bestmove")]
        if stray and words[:1] not in (["stop"], ["ponderhit"]):
            report.malformed(line, f"unexpected {stray[0]!r}")

    def goodbye(engine: PipeEngine) -> None:
        engine.send(b"quit\n")
        code = engine.close(timeout=timeout)
        if code != 0:
            report.malformed(b"quit", f"exit code {code}")

    return _fuzz_session(argv, env, report, source, lines, exchange, goodbye, timeout, log, label="uci")
