"""Go handicap stones as GTP places them (`fixed_handicap`, `place_free_handicap`, `set_free_handicap`).

    fixed_handicap_vertices(9, 3)   # ['C3', 'G7', 'C7']
    max_fixed_handicap(7)           # 4

Fixed placement follows the GTP 2 specification (draft 2, section 4.1.1), as GNU Go, its reference engine, places
the stones: on the third line from each edge on boards up to 12x12 (the fourth from 13x13), corners first (lower
left, upper right, upper left, lower right), then the centre for 5, 7 and 9 stones, the left and right side points
for 6 to 9 and the lower and upper side points for 8 and 9. Boards from 7x7 to 25x25 have fixed positions: at most
4 stones on 7x7 and even sizes, 9 on odd sizes from 9x9. Free placement takes 2 to size² - 1 stones.
"""

from __future__ import annotations

from azjax.games import GO_COLUMNS


def max_fixed_handicap(size: int) -> int:
    """The most stones `fixed_handicap` places on a `size` x `size` board (0: no fixed positions)."""
    if not 7 <= size <= 25:
        return 0
    return 4 if size % 2 == 0 or size == 7 else 9


def max_free_handicap(size: int) -> int:
    """The most stones `place_free_handicap` and `set_free_handicap` take: every point but one."""
    return size * size - 1


def fixed_handicap_vertices(size: int, stones: int) -> list[str]:
    """The GTP vertices of `stones` fixed handicap stones; ValueError("invalid number of stones") where the
    specification defines none (fewer than 2, or more than `max_fixed_handicap(size)`)."""
    if not 2 <= stones <= max_fixed_handicap(size):
        raise ValueError("invalid number of stones")
    edge = 2 if size < 13 else 3  # 0-based distance from the edge: the 3rd or the 4th line
    low, mid, high = edge, (size - 1) // 2, size - 1 - edge
    corners = [(low, low), (high, high), (low, high), (high, low)]  # (column, row), row 0 at the bottom
    sides_lr = [(low, mid), (high, mid)]
    sides_bt = [(mid, low), (mid, high)]
    centre = [(mid, mid)]
    layout = {2: corners[:2], 3: corners[:3], 4: corners, 5: corners + centre, 6: corners + sides_lr,
              7: corners + sides_lr + centre, 8: corners + sides_lr + sides_bt,
              9: corners + sides_lr + sides_bt + centre}[stones]
    return [f"{GO_COLUMNS[col]}{row + 1}" for col, row in layout]
