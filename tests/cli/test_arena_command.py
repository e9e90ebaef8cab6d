"""`azjax arena`'s out_dir: what a rerun into the same folder keeps and replaces."""

from __future__ import annotations

import json
from pathlib import Path

from azjax.cli import main
from azjax.cli.arena import remove_earlier_records


def _arena(out: Path, *agents: str) -> None:
    assert main(["arena", *agents, "--game", "connect_four", "--games", "2", "--out_dir", str(out)]) == 0


def test_a_rerun_into_the_same_out_dir_leaves_only_its_own_games_beside_its_results(tmp_path, capsys):
    out = tmp_path / "arena"
    _arena(out, "a=random", "b=random", "c=random")
    assert len(list((out / "games").iterdir())) == 6  # 3 pairings x 2 games
    (out / "games" / "notes.md").write_text("the user's own file\n")
    capsys.readouterr()

    _arena(out, "a=random", "c=random")
    assert "removed 6 game records of an earlier arena" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert [(p["name_a"], p["name_b"]) for p in results["pairings"]] == [("a", "c")]
    records = sorted(p.name for p in (out / "games").iterdir() if p.name != "notes.md")
    assert records == ["00_a_vs_c_0000.txt", "00_a_vs_c_0001.txt"]
    assert (out / "games" / "notes.md").read_text() == "the user's own file\n"


def test_only_files_named_as_the_arena_names_its_records_are_removed(tmp_path):
    games = tmp_path / "games"
    games.mkdir()
    names = ["00_a_vs_b_0000.sgf", "01_x_vs_y_0003.pgn", "00_a_vs_b_0000.txt", "readme.txt", "0_a_vs_b_1.txt"]
    for name in names:
        (games / name).write_text("")
    assert remove_earlier_records(games, {games / "00_a_vs_b_0000.txt"}) == 2
    assert sorted(p.name for p in games.iterdir()) == ["00_a_vs_b_0000.txt", "0_a_vs_b_1.txt", "readme.txt"]
    assert remove_earlier_records(tmp_path / "absent", set()) == 0
