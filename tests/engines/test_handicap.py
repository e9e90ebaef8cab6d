"""GTP's fixed handicap placement on the boards azjax plays, against GNU Go's (the GTP reference engine)."""

from __future__ import annotations

import subprocess

import pytest
from outside_programs import outside_program

from azjax.engines.handicap import fixed_handicap_vertices, max_fixed_handicap, max_free_handicap


def test_fixed_handicap_follows_the_gtp_layout_on_7x7_and_9x9():
    assert fixed_handicap_vertices(9, 2) == ["C3", "G7"]
    assert fixed_handicap_vertices(9, 5) == ["C3", "G7", "C7", "G3", "E5"]
    assert fixed_handicap_vertices(9, 8) == ["C3", "G7", "C7", "G3", "C5", "G5", "E3", "E7"]
    assert fixed_handicap_vertices(7, 4) == ["C3", "E5", "C5", "E3"]
    assert fixed_handicap_vertices(19, 9) == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K4", "K16", "K10"]
    assert [max_fixed_handicap(s) for s in (5, 7, 8, 9, 13, 19, 27)] == [0, 4, 4, 9, 9, 9, 0]
    assert max_free_handicap(9) == 80
    for size, stones in ((9, 1), (9, 10), (7, 5), (5, 2)):
        with pytest.raises(ValueError, match="invalid number of stones"):
            fixed_handicap_vertices(size, stones)


def test_fixed_handicap_places_the_stones_gnu_go_places():
    gnugo = outside_program("gnugo")
    for size in (7, 9):
        counts = range(1, max_fixed_handicap(size) + 2)
        commands = [f"boardsize {size}"] + [c for n in counts for c in ("clear_board", f"fixed_handicap {n}")]
        out = subprocess.run([gnugo, "--mode", "gtp"], input="\n".join(commands) + "\nquit\n", capture_output=True,
                             text=True, timeout=60).stdout
        replies = [r.strip() for r in out.strip().split("\n\n")][2::2][: len(counts)]
        for n, reply in zip(counts, replies, strict=True):
            if reply.startswith("?"):
                with pytest.raises(ValueError):
                    fixed_handicap_vertices(size, n)
            else:
                assert sorted(fixed_handicap_vertices(size, n)) == sorted(reply[1:].split()), (size, n)
