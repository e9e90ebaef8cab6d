"""`azjax arena`'s out_dir: one collection of the games, what a rerun into the same folder keeps and replaces."""

from __future__ import annotations

import json
from pathlib import Path

import azjax.cli.arena
from azjax.cli import main
from azjax.cli.arena import remove_other_collections
from azjax.engines.external import EngineError
from azjax.engines.records import read_collection
from azjax.play.tournament import GameSummary


def _arena(out: Path, *agents: str) -> None:
    assert main(["arena", *agents, "--game", "connect_four", "--games", "2", "--out_dir", str(out)]) == 0


def test_a_rerun_into_the_same_out_dir_replaces_the_collection_and_leaves_other_files(tmp_path, capsys):
    out = tmp_path / "arena"
    _arena(out, "a=random", "b=random", "c=random")
    assert [g["id"] for g in read_collection(out / "games.txt")] == [
        "00_a_vs_b_0000", "00_a_vs_b_0001", "01_a_vs_c_0000", "01_a_vs_c_0001", "02_b_vs_c_0000", "02_b_vs_c_0001"]
    (out / "notes.md").write_text("the user's own file\n")
    (out / "games.sgf").write_bytes(b"(;GM[1]SZ[9]GN[00_x_vs_y_0000])\n")  # an earlier Go arena's games
    capsys.readouterr()

    _arena(out, "a=random", "c=random")
    assert "removed games.sgf: an earlier arena's games" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert [(p["name_a"], p["name_b"]) for p in results["pairings"]] == [("a", "c")]
    assert [g["id"] for g in read_collection(out / "games.txt")] == ["00_a_vs_c_0000", "00_a_vs_c_0001"]
    assert sorted(p.name for p in out.iterdir()) == ["games.txt", "notes.md", "results.json"]
    assert (out / "notes.md").read_text() == "the user's own file\n"


def test_an_arena_stopped_in_a_pairing_keeps_the_games_of_the_pairings_before_it(tmp_path, monkeypatch, capsys):
    """Scripted pairings (no game is played): A wins every game, and the engine of the third pairing dies."""

    def play_pairing(game, a, b, openings, max_plies, seed, players, batch_size):
        if (a.name, b.name) == ("b", "c"):
            raise EngineError("engine c exited")
        return [GameSummary(moves=[*o.moves, "4", "5"], outcome_a=1.0, a_first=a_first, terminated=True,
                            illegal=False, reason="", go_score=None, opening=o)
                for a_first in (True, False) for o in openings]

    monkeypatch.setattr(azjax.cli.arena, "play_pairing", play_pairing)
    out = tmp_path / "arena"
    assert main(["arena", "a=random", "b=random", "c=random", "--game", "connect_four", "--games", "2",
                 "--out_dir", str(out)]) == 2
    assert "engine c exited" in capsys.readouterr().err
    games = read_collection(out / "games.txt")
    assert [g["id"] for g in games] == ["00_a_vs_b_0000", "00_a_vs_b_0001", "01_a_vs_c_0000", "01_a_vs_c_0001"]
    assert [(g["first"], g["second"], g["result"]) for g in games] == [
        ("a", "b", "1-0"), ("b", "a", "0-1"), ("a", "c", "1-0"), ("c", "a", "0-1")]  # colours alternate; A wins
    assert all(g["moves"] == ["4", "5"] and g["game"] == "connect_four" for g in games)
    assert not (out / "results.json").exists()


def test_only_the_collections_of_other_games_are_removed(tmp_path):
    for name in ("games.sgf", "games.pgn", "games.txt", "games.json", "readme.txt"):
        (tmp_path / name).write_text("")
    assert remove_other_collections(tmp_path, tmp_path / "games.pgn") == ["games.sgf", "games.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["games.json", "games.pgn", "readme.txt"]
    assert remove_other_collections(tmp_path / "absent", tmp_path / "absent" / "games.txt") == []
