"""final_status_list's dead stones: none under Tromp-Taylor without an ownership head; with one, the chains the head
gives to the other colour, checked against GNU Go's `final_status_list dead` on finished games."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import random_params
from outside_programs import outside_program

from azjax.checkpoint import save_config, save_params
from azjax.config import Config
from azjax.engines.engine import Engine
from azjax.engines.final_status import black_ownership, chains, dead_chains, has_ownership, stone_status
from azjax.engines.records import read_collection
from azjax.engines.sgf_io import load_sgf, read_sgf
from azjax.games import make_game

ROOT = Path(__file__).resolve().parents[2]


def test_chains_are_whole_strings_and_dead_where_the_mean_ownership_is_the_other_colours():
    board = np.zeros((5, 5), np.int8)
    board[0, 0] = board[0, 1] = 1  # a black chain A5 B5
    board[1, 0] = -1  # a white stone A4, touching it but another chain
    board[4, 4] = 1  # E1
    assert chains(board) == [[(0, 0), (0, 1)], [(1, 0)], [(4, 4)]]
    ownership = np.zeros((5, 5))
    ownership[0, 0], ownership[0, 1] = -0.9, 0.5  # mean -0.2: the chain is White's at the end
    ownership[1, 0] = -0.1  # White owns its own point: alive
    ownership[4, 4] = 0.3
    assert dead_chains(board, ownership) == [[(0, 0), (0, 1)]]
    assert dead_chains(board, None) == []  # Tromp-Taylor: every stone counts for its colour


@pytest.fixture(scope="module")
def go_engine(models) -> Engine:
    return Engine.from_checkpoint(str(models["go_9x9"]))


def test_without_an_ownership_head_every_stone_is_alive_and_none_dead(go_engine):
    e = go_engine
    assert not has_ownership(e.config)
    e.position.set_position(["C3", "D4", "C4", "pass", "J9"])
    assert stone_status(e, "dead") == [] and stone_status(e, "seki") == []
    assert stone_status(e, "alive") == [["J9"], ["C4", "C3"], ["D4"]]
    with pytest.raises(ValueError, match="invalid status 'bogus'"):
        stone_status(e, "bogus")
    e.position.reset()


def test_with_an_ownership_head_the_dead_and_the_alive_chains_split_the_board(tmp_path):
    config = Config(game="go_9x9", num_blocks=1, num_channels=8, eval_simulations=4, ownership_loss_weight=1.5)
    save_config(tmp_path, config)
    save_params(tmp_path, random_params(config, make_game("go_9x9")))
    e = Engine.from_checkpoint(str(tmp_path))
    assert has_ownership(e.config)
    e.position.set_position(["C3", "D4", "C4", "E5", "J9", "A1", "H8"])
    ownership = black_ownership(e)
    assert ownership.shape == (9, 9) and np.all(np.abs(ownership) <= 1)
    dead, alive = stone_status(e, "dead"), stone_status(e, "alive")
    board = e.game.board(e.position.state)
    assert len(dead + alive) == len(chains(board)) == 6  # C4-C3 is one chain
    assert sorted(v for ch in dead + alive for v in ch) == sorted(["C3", "D4", "C4", "E5", "J9", "A1", "H8"])
    assert len(dead) == len(dead_chains(board, ownership))
    # The side to move flips the head's view: Black's view stays Black's
    e.position.play("pass")
    assert black_ownership(e).shape == (9, 9)


# Finished 9x9 games of the committed arena (two passes, dead stones left on the board in most of the first four).
ARENA = ROOT / "results" / "arena" / "go_9x9" / "games.sgf"
GAMES = ["02_go_9x9_sai_512_sensible_lambda_0.5_vs_gnugo-l10_0000",
         "01_go_9x9_sai_512_sensible_lambda_0.5_vs_gnugo-l1_0018",
         "02_go_9x9_sai_512_sensible_lambda_0.5_vs_gnugo-l10_0024",
         "01_go_9x9_sai_512_sensible_lambda_0.5_vs_gnugo-l1_0027",
         "02_go_9x9_sai_512_sensible_lambda_0.5_vs_gnugo-l10_0012",
         "01_go_9x9_sai_512_sensible_lambda_0.5_vs_gnugo-l1_0000"]


@pytest.mark.slow
def test_the_ownership_heads_dead_stones_are_gnu_gos_on_finished_games(tmp_path):
    """results/models/go_9x9_sai (an ownership head) against GNU Go 3.8's `final_status_list dead` on six finished
    arena games: the same stones, 8 dead in all. (On all 80 of the arena's games against GNU Go the two agreed on
    every stone.)"""
    gnugo = outside_program("gnugo")
    e = Engine.from_checkpoint(str(ROOT / "results" / "models" / "go_9x9_sai"))
    records = {g["id"]: g["record"] for g in read_collection(ARENA)}
    total = 0
    for name in GAMES:
        path = tmp_path / f"{name}.sgf"  # GNU Go's loadsgf reads the first game of a file: one game a file
        path.write_bytes(records[name])
        out = subprocess.run([gnugo, "--mode", "gtp"], input=f"loadsgf {path}\nfinal_status_list dead\nquit\n",
                             capture_output=True, text=True, timeout=120).stdout
        reply = out.strip().split("\n\n")[1]
        assert reply.startswith("="), reply
        gnugo_dead = set(reply[1:].split())
        load_sgf(e.position, read_sgf(records[name]))
        assert e.position.is_over
        ours = {v for chain in stone_status(e, "dead") for v in chain}
        assert ours == gnugo_dead, name
        total += len(ours)
    assert total == 8
