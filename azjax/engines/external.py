"""Clients for external engines over subprocess pipes: GTP (GNU Go, azjax gtp, ...) and UCI
(Stockfish, azjax uci, ...).

    with GTPClient(["/usr/games/gnugo", "--mode", "gtp", "--level", "1"]) as gnugo:
        gnugo.command("boardsize 9"); gnugo.command("clear_board")
        move = gnugo.command("genmove b")

    with UCIClient(["/usr/games/stockfish"], options={"Skill Level": 0}) as sf:
        sf.new_game()
        move = sf.bestmove(moves=["e2e4"], movetime_ms=10)

Every read has a timeout (a reader thread feeds a queue), so a hung or crashed program raises
`EngineError` instead of blocking; `close()` sends quit, waits briefly, then kills the process.
"""

from __future__ import annotations

import queue
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class EngineError(RuntimeError):
    """An external engine failed: it exited, timed out, or answered with an error."""


def resolve_command(command: str | Sequence[str]) -> list[str]:
    """A command line as a list; a bare program name is looked up in PATH and /usr/games."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("empty engine command")
    if "/" in argv[0]:
        if not Path(argv[0]).is_file():
            raise ValueError(f"engine program not found: {argv[0]!r}")
    else:
        found = shutil.which(argv[0]) or shutil.which(argv[0], path="/usr/games:/usr/local/games")
        if found is None:
            raise ValueError(f"engine program not found: {argv[0]!r}")
        argv[0] = found
    return argv


class _Process:
    """A child process with line-based stdin/stdout and timed reads."""

    def __init__(self, argv: Sequence[str], name: str, startup_timeout: float = 30.0):
        self.argv = resolve_command(argv)
        self.name = name
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, bufsize=1,
            )
        except OSError as e:
            raise EngineError(f"cannot start {name} ({' '.join(self.argv)}): {e}") from e
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.startup_timeout = startup_timeout
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)  # EOF

    def write(self, line: str) -> None:
        if self.proc.poll() is not None:
            raise EngineError(f"{self.name} has exited (code {self.proc.returncode})")
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            # A closed pipe usually means the engine exited between poll() and the write: say so.
            try:
                code = self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                raise EngineError(f"{self.name}: cannot write {line!r}: {e}") from e
            raise EngineError(f"{self.name} has exited (code {code}) before reading {line!r}") from e

    def readline(self, deadline: float) -> str:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise EngineError(f"{self.name} timed out")
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise EngineError(f"{self.name} timed out") from None
        if line is None:
            self.lines.put(None)
            raise EngineError(f"{self.name} exited unexpectedly (code {self.proc.poll()})")
        return line

    def close(self, quit_command: str, timeout: float = 3.0) -> None:
        if self.proc.poll() is None:
            try:
                self.write(quit_command)
            except EngineError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class GTPClient:
    """Talks GTP to a program: `command(text)` returns the response text or raises EngineError."""

    def __init__(self, command: str | Sequence[str], name: str | None = None, timeout: float = 60.0):
        self.timeout = timeout
        self.process = _Process(command, name or "gtp engine")
        self.name = name or self.command("name")

    def command(self, text: str, timeout: float | None = None) -> str:
        self.process.write(text)
        deadline = time.monotonic() + (timeout or self.timeout)
        lines: list[str] = []
        while True:
            line = self.process.readline(deadline)
            if not lines and not line.strip():
                continue  # stray empty lines before a response
            if not line.strip():
                break
            lines.append(line)
        head = lines[0]
        body = "\n".join([head[1:].lstrip()] + lines[1:]).strip()
        if head.startswith("?"):
            raise EngineError(f"{self.process.name}: {text!r} failed: {body}")
        if not head.startswith("="):
            raise EngineError(f"{self.process.name}: bad GTP response to {text!r}: {head!r}")
        # strip an echoed numeric id
        parts = body.split(None, 1)
        if parts and parts[0].isdigit() and head[1:2].isdigit():
            body = parts[1] if len(parts) > 1 else ""
        return body

    def close(self) -> None:
        self.process.close("quit")

    def __enter__(self) -> GTPClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class UCIClient:
    """Talks UCI to a chess program."""

    def __init__(self, command: str | Sequence[str], options: dict[str, Any] | None = None, name: str | None = None,
                 timeout: float = 60.0):
        self.timeout = timeout
        self.process = _Process(command, name or "uci engine")
        self.process.write("uci")
        deadline = time.monotonic() + timeout
        engine_name = None
        while True:
            line = self.process.readline(deadline)
            if line.startswith("id name "):
                engine_name = line[len("id name ") :].strip()
            if line.strip() == "uciok":
                break
        self.name = name or engine_name or "uci engine"
        for key, value in (options or {}).items():
            self.process.write(f"setoption name {key} value {value}")
        self.isready()

    def isready(self) -> None:
        self.process.write("isready")
        deadline = time.monotonic() + self.timeout
        while self.process.readline(deadline).strip() != "readyok":
            pass

    def new_game(self) -> None:
        self.process.write("ucinewgame")
        self.isready()

    def bestmove(self, moves: Sequence[str] = (), fen: str | None = None, *, movetime_ms: int | None = None,
                 nodes: int | None = None, depth: int | None = None,
                 clock: dict[str, int] | None = None) -> tuple[str, list[str]]:
        """(best move in UCI notation, the info lines seen) for the position start + moves.

        clock: the game's clock for the engine to manage its own time, in milliseconds (`wtime`, `btime`, `winc`,
          `binc`, `movestogo`: `go`'s words)."""
        pos = f"position fen {fen}" if fen else "position startpos"
        if moves:
            pos += " moves " + " ".join(moves)
        self.process.write(pos)
        go = "go"
        if movetime_ms is not None:
            go += f" movetime {int(movetime_ms)}"
        if nodes is not None:
            go += f" nodes {int(nodes)}"
        if depth is not None:
            go += f" depth {int(depth)}"
        for word, ms in (clock or {}).items():
            go += f" {word} {max(int(ms), 0)}"
        if go == "go":
            go += " movetime 100"
        self.process.write(go)
        # generous: a first search may include compilation (azjax's own engine) or a slow machine
        deadline = time.monotonic() + max(self.timeout, 300.0) + (movetime_ms or 0) / 1000.0 + sum(
            (clock or {}).values()) / 1000.0
        info = []
        while True:
            line = self.process.readline(deadline)
            if line.startswith("bestmove"):
                parts = line.split()
                if len(parts) < 2:
                    raise EngineError(f"{self.name}: bad bestmove line {line!r}")
                return parts[1], info
            if line.startswith("info"):
                info.append(line)

    def close(self) -> None:
        self.process.close("quit")

    def __enter__(self) -> UCIClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
