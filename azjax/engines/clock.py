"""Time management for the engines: how many seconds a move may take under a GUI's clock, and how many visits fit
in them. Pure functions and one small model, no JAX: the front ends (`azjax.engines.uci`, `azjax.engines.gtp`) turn
what the GUI sends into a budget, the engine's measured speed (`SpeedModel`) turns the budget into visits.

    budget = uci_budget(left_s=59.0, inc_s=1.0, overhead_s=0.2)            # seconds for this move's search
    budget = gtp_budget(TimeSettings.canadian(0, 1, 1), None, moves_left=29, overhead_s=0.2)
    visits = pick_visits(budget, speed, visit_buckets(512))                # a bucket whose search fits

The rules (docs/engines.md, "Time management"):

  * Every clock is read as seconds left, less the move overhead (UCI option `MoveOverhead`, flag
    `--move_overhead`: the time between the engine's answer and the GUI's clock stopping, and the engine's own
    work around the search; 200 ms by default, lc0's default too).
  * UCI: `movetime` gives the whole budget (less the overhead). With `wtime`/`btime`: the time left spread over
    `movestogo` moves (default 30), plus three quarters of the increment, at most 40% of the time left (90% when
    `movestogo` is 1: the control's last move).
  * GTP: `time_settings` main byo stones is absolute time when byo is 0, no limit when stones is 0 and byo is not
    (GTP's convention), Canadian byo-yomi otherwise; `kgs-time_settings` adds Japanese byo-yomi (periods).
    `time_left` colour seconds stones: stones 0 is main time, else seconds for that many stones (Canadian) or the
    current period's seconds with that many periods left (Japanese, KGS's convention). Before any `time_left`, the
    clock is taken as the settings start it. In main time the budget is the time left spread over the moves
    expected (Leela Zero's estimate: for size N, N^2 / 5 plus the N^2 / 6 fast opening moves not yet played), plus
    one byo-yomi move's time (the byo-yomi that follows is there to be used); in Canadian byo-yomi the period's
    seconds over its stones; in Japanese byo-yomi the period's seconds. Each less the overhead.
  * The visits: the largest bucket (`visit_buckets`: powers of two up to the engine's visits, and those visits)
    whose predicted search time, times `SAFETY`, fits the budget; the smallest bucket when none does. The
    prediction (`SpeedModel`) is fitted to the engine's own searches, timed from their first call at start-up
    (`azjax.engines.engine.Engine.prepare`) and after every move, so it follows the machine's load.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Sequence

MOVE_OVERHEAD_S = 0.2  # default move overhead (lc0's MoveOverheadMs is 200 too)
SAFETY = 1.25  # a bucket is chosen when its predicted seconds, times this, fit the budget
DEFAULT_MOVES_TO_GO = 30  # UCI without movestogo: the time left is spread over this many moves
INCREMENT_SHARE = 0.75  # of the increment, spent on top of the share of the time left
MAX_SHARE = 0.4  # of the time left, the most one move may take (0.9 when the control ends after it)


def visit_buckets(visits: int) -> tuple[int, ...]:
    """The search sizes the clock picks from: 1, 2, 4, ... below `visits`, then `visits`. Every one runs in the
    engine's one compiled search (the visits are an input of the program, not its shape), so they cost no
    compile; they are few so that each is timed often.

        visit_buckets(100) == (1, 2, 4, 8, 16, 32, 64, 100)
    """
    if visits < 1:
        raise ValueError(f"visits must be >= 1, got {visits}")
    out = []
    v = 1
    while v < visits:
        out.append(v)
        v *= 2
    return (*out, visits)


class SpeedModel:
    """Seconds a search of v visits takes: fixed + per_visit * v, fitted to the most recent searches (at most
    `window`) and erring slow.

    fixed is the fastest search seen at the fewest visits seen; per_visit the steepest rise from it to any search
    of more visits (a search slowed by the machine's load makes the next predictions slower, until it leaves the
    window). With searches of one size only, the time is taken as proportional to the visits (fixed 0), which
    over-predicts bigger searches and under-predicts none of the smaller ones' visits by more than their share.
    """

    def __init__(self, window: int = 12):
        self.samples: collections.deque[tuple[int, float]] = collections.deque(maxlen=window)

    def observe(self, visits: int, seconds: float) -> None:
        """A search of `visits` new visits took `seconds` (wall time, the host's work around it included)."""
        if visits >= 1 and seconds >= 0 and math.isfinite(seconds):
            self.samples.append((int(visits), float(seconds)))

    def fit(self) -> tuple[float, float] | None:
        """(fixed seconds, seconds per visit), or None before any search."""
        if not self.samples:
            return None
        fewest = min(v for v, _ in self.samples)
        fixed = min(s for v, s in self.samples if v == fewest)
        rises = [(s - fixed) / (v - fewest) for v, s in self.samples if v > fewest]
        if not rises:  # one size seen: proportional
            return 0.0, max(s for _, s in self.samples) / fewest
        per_visit = max(max(rises), 0.0)
        return max(fixed - per_visit * fewest, 0.0), per_visit

    def predict(self, visits: int) -> float | None:
        """Predicted seconds of a search of `visits`; None before any search."""
        fit = self.fit()
        if fit is None:
            return None
        fixed, per_visit = fit
        return fixed + per_visit * visits


def pick_visits(budget_s: float | None, speed: SpeedModel, buckets: Sequence[int], safety: float = SAFETY) -> int:
    """The largest of `buckets` (increasing) whose predicted time, times `safety`, fits `budget_s`; the smallest
    when none fits; the largest when there is no budget (no clock) or no prediction yet."""
    if budget_s is None:
        return buckets[-1]
    fitting = [b for b in buckets if (p := speed.predict(b)) is None or p * safety <= budget_s]
    return fitting[-1] if fitting else buckets[0]


# ---------------------------------------------------------------- UCI


def uci_budget(*, left_s: float | None, inc_s: float = 0.0, movestogo: int | None = None,
               movetime_s: float | None = None, overhead_s: float = MOVE_OVERHEAD_S) -> float | None:
    """Seconds this move's search may take under a UCI `go` (None: no clock; see the module docstring).

        uci_budget(left_s=60.0, overhead_s=0.2) == 59.8 / 30
        uci_budget(left_s=60.0, movetime_s=1.0, overhead_s=0.2) == 0.8
    """
    if movetime_s is not None:
        return max(movetime_s - overhead_s, 0.0)
    if left_s is None:
        return None
    usable = max(left_s - overhead_s, 0.0)
    moves = movestogo if movestogo is not None and movestogo > 0 else DEFAULT_MOVES_TO_GO
    budget = usable / moves + INCREMENT_SHARE * max(inc_s, 0.0)
    return min(budget, usable * (0.9 if moves == 1 else MAX_SHARE))


# ---------------------------------------------------------------- GTP


@dataclasses.dataclass(frozen=True)
class TimeSettings:
    """A GTP clock (seconds): `kind` "none" (no limit), "absolute" (main time only), "canadian" (main, then
    `period` seconds for every `stones` stones) or "byoyomi" (Japanese: main, then `periods` periods of `period`
    seconds, a period lost when a move overruns it)."""

    kind: str
    main: float = 0.0
    period: float = 0.0
    stones: int = 0
    periods: int = 0

    @classmethod
    def from_gtp(cls, main: float, byo: float, stones: int) -> TimeSettings:
        """`time_settings main byo stones` (GTP 2, section 6.3.1): byo 0 is absolute time (no time at all when
        main is 0 too: no limit), byo > 0 with stones 0 is no limit, else Canadian byo-yomi."""
        if byo > 0 and stones == 0:
            return cls("none")
        if byo == 0:
            return cls("absolute", main=main) if main > 0 else cls("none")
        return cls("canadian", main=main, period=byo, stones=stones)

    @classmethod
    def from_kgs(cls, args: Sequence[str]) -> TimeSettings:
        """`kgs-time_settings none | absolute main | byoyomi main period periods | canadian main period stones`;
        raises ValueError for anything else."""
        kind = args[0].lower() if args else ""
        counts = {"none": 0, "absolute": 1, "byoyomi": 3, "canadian": 3}
        if kind not in counts or len(args) != 1 + counts[kind]:
            raise ValueError("kgs-time_settings none | absolute MAIN | byoyomi MAIN PERIOD PERIODS | "
                             "canadian MAIN PERIOD STONES")
        numbers = [float(a) for a in args[1:]]
        if any(not (0 <= x < math.inf) for x in numbers) or any(x != int(x) for x in numbers[2:]):
            raise ValueError("kgs-time_settings needs non-negative numbers (whole ones for periods or stones)")
        if kind == "none":
            return cls("none")
        if kind == "absolute":
            return cls("absolute", main=numbers[0]) if numbers[0] > 0 else cls("none")
        main, period, count = numbers[0], numbers[1], int(numbers[2])
        if period == 0 or count == 0:  # no byo-yomi after the main time: absolute
            return cls("absolute", main=main) if main > 0 else cls("none")
        if kind == "byoyomi":
            return cls("byoyomi", main=main, period=period, periods=count)
        return cls("canadian", main=main, period=period, stones=count)

    def start(self) -> tuple[float, int]:
        """The clock at the start of a game, as `time_left` would give it: (main, 0), or the first byo-yomi period
        (seconds, stones or periods) where there is no main time."""
        if self.main > 0 or self.kind in ("none", "absolute"):
            return self.main, 0
        return self.period, self.stones if self.kind == "canadian" else self.periods


def go_moves_left(size: int, ply: int) -> float:
    """Leela Zero's moves still expected of one player on a size x size board after `ply` plies: size^2 / 5, plus
    the size^2 / 6 fast opening moves not played yet (its `get_moves_expected`; the ply counts both players'
    moves there, and so here)."""
    base, fast = size * size / 5, size * size / 6
    return base + max(fast - ply, 0.0)


def gtp_budget(settings: TimeSettings | None, left: tuple[float, int] | None, moves_left: float,
               overhead_s: float = MOVE_OVERHEAD_S) -> float | None:
    """Seconds this move's search may take (None: no clock; see the module docstring).

    left: the latest `time_left` (seconds, stones), or None (the clock as `settings` start it).
    moves_left: the moves this player is still expected to make (`go_moves_left` for Go).

        gtp_budget(TimeSettings.from_gtp(0, 1, 1), None, 29, overhead_s=0.2) == 0.8   # 1 s a stone
    """
    if settings is None or settings.kind == "none":
        return None
    seconds, stones = left if left is not None else settings.start()
    moves = max(moves_left, 1.0)
    if settings.kind == "absolute":
        usable = max(seconds - overhead_s, 0.0)
        return min(usable / moves, usable * MAX_SHARE)
    in_byoyomi = stones > 0 or (seconds == 0 and settings.period > 0)  # `time_left c 0 0`: main time is over
    if in_byoyomi and seconds == 0 and stones == 0:  # a byo-yomi period starts now
        seconds, stones = settings.period, settings.stones if settings.kind == "canadian" else settings.periods
    if settings.kind == "canadian":
        per_move = settings.period / settings.stones  # the byo-yomi's own rate
        if in_byoyomi:
            return max(seconds / max(stones, 1) - overhead_s, 0.0)
    else:
        per_move = settings.period  # Japanese: each move may take a whole period
        if in_byoyomi:
            return max(seconds - overhead_s, 0.0)
    # Main time: its share, and one move at the byo-yomi's rate, which the byo-yomi after it covers.
    usable = max(seconds - overhead_s, 0.0)
    return min(usable / moves, usable * MAX_SHARE) + max(per_move - overhead_s, 0.0)

