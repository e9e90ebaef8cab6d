"""KataGo's auxiliary targets (azjax.methods.katago_aux): the final ownership and score of hand-made and played
7x7 boards against an independent flood fill and pgx's own count, the mover's view, the symmetry the targets
share with their observation, the heads learning what a constant cannot, the loop and the command line with
the heads on, and AlphaZero (no heads, no finals, no terms) when both weights are 0."""

from __future__ import annotations

import math
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import fit_auxiliary_heads
from pgx._src.games import go as pgx_go

from azjax import replay as rb
from azjax.build import board_game, init_params, load_model, make_evaluator, make_network
from azjax.checkpoint import save_config, save_params
from azjax.cli import main
from azjax.config import Config, preset
from azjax.games import board_arrays, make_game, where_games
from azjax.games.augment import augment
from azjax.methods.alphazero import NoAuxiliaryTargets, TanhValue
from azjax.methods.katago_aux import AuxiliaryValue, OwnershipScoreTargets, area_ownership, final_targets
from azjax.train import load_metrics
from azjax.train.loop import Trainer

SIZE = 7
# Tiny 7x7 loop settings whose games end and SGD runs within 4 steps (tests/conftest.py's SAI ones, tanh head).
TINY = dict(num_envs=8, num_simulations=4, moves_per_step=16, replay_size=256, min_replay_size=8, batch_size=8,
            sgd_steps_per_step=1, num_blocks=1, num_channels=8, eval_every=0, log_every=1, checkpoint_every=4,
            lr_warmup_steps=1, num_steps=4, temperature_moves=4)
ON = dict(ownership_loss_weight=1.5, score_loss_weight=0.1)


def flood_fill_ownership(board: np.ndarray) -> np.ndarray:
    """Plain numpy: Black's view of each point's owner on a [size, size] board of +1 / -1 / 0, by a breadth-first
    walk of every empty region and the colours it touches."""
    size = board.shape[0]
    owner = np.sign(board).astype(np.int8)
    seen = np.zeros_like(board, bool)
    for r0, c0 in zip(*np.nonzero(board == 0), strict=True):
        if seen[r0, c0]:
            continue
        region, touches, queue = [], set(), deque([(r0, c0)])
        seen[r0, c0] = True
        while queue:
            r, c = queue.popleft()
            region.append((r, c))
            for rr, cc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if 0 <= rr < size and 0 <= cc < size:
                    if board[rr, cc] == 0 and not seen[rr, cc]:
                        seen[rr, cc] = True
                        queue.append((rr, cc))
                    elif board[rr, cc] != 0:
                        touches.add(int(board[rr, cc]))
        value = touches.pop() if len(touches) == 1 else 0
        for r, c in region:
            owner[r, c] = value
    return owner


def parse(rows: str) -> np.ndarray:
    """A 7x7 board from text: X Black, O White, . empty."""
    return np.array([[{"X": 1, "O": -1, ".": 0}[ch] for ch in row.split()] for row in rows.strip().splitlines()])


HAND_MADE = [
    # Black walls off the left, White the right; the middle column touches both: dame.
    """
    . . X . O . .
    . . X . O . .
    . . X . O . .
    . . X . O . .
    . . X . O . .
    . . X . O . .
    . . X . O . .
    """,
    # A White group inside Black's area owns its own eye; the corner region touches only Black.
    """
    . . . . . . .
    . X X X X X .
    . X O O O X .
    . X O . O X .
    . X O O O X .
    . X X X X X .
    . . . . . . .
    """,
    # One stone owns the whole board; an empty board owns nothing (both sides' area in pgx's count).
    """
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . O . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    """,
    """
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    """,
]


def pgx_board(board: np.ndarray) -> jnp.ndarray:
    """pgx's board encoding (+-(point + 1) per stone) of a +1 / -1 / 0 board; the chain ids do not matter here."""
    flat = board.reshape(-1)
    return jnp.asarray(np.where(flat != 0, flat * (np.arange(flat.size) + 1), 0), jnp.int32)


@jax.jit
@jax.vmap
def pgx_black_lead(board: jnp.ndarray) -> jnp.ndarray:
    """Black's area minus White's as pgx counts it (`_count_scores`), before komi; boards [n, N]."""
    scores = pgx_go._count_scores(pgx_go.GameState(board=board), SIZE)
    return scores[0] - scores[1]


def random_boards(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice([-1, 0, 0, 1], size=(n, SIZE, SIZE), p=[0.25, 0.25, 0.25, 0.25])


def test_ownership_of_hand_made_and_random_boards_is_a_flood_fills_and_sums_to_pgxs_lead():
    boards = np.concatenate([np.stack([parse(b) for b in HAND_MADE]), random_boards(24, 0)])
    encoded = jnp.stack([pgx_board(b) for b in boards])
    ours = np.asarray(area_ownership(encoded, SIZE)).reshape(boards.shape)
    assert ours.dtype == np.int8
    for board, own in zip(boards, ours, strict=True):
        np.testing.assert_array_equal(own, flood_fill_ownership(board))
    np.testing.assert_array_equal(ours.sum(axis=(1, 2)), pgx_black_lead(encoded))
    first, ring = ours[0], ours[1]
    assert (first[:, :3] == 1).all() and (first[:, 3] == 0).all() and (first[:, 4:] == -1).all()
    assert ring[3, 3] == -1 and ring[0, 0] == 1 and (ring[2:5, 2:5] == -1).all()
    assert (ours[2] == -1).all() and (ours[3] == 0).all()


def play_to_the_end(game, key: jax.Array, n: int):  # noqa: ANN001, ANN201
    """n random 7x7 games played to their end (half pass late, half play on, so both two-pass ends and the move
    cap occur); returns the final states [n] and the outcome of player id 0 [n] (the ending move's reward)."""
    states = jax.vmap(game.init)(jax.random.split(key, n))
    num = game.num_actions

    passes = jnp.arange(n) % 2 == 1  # the other half plays on to the move cap

    def move(i, carry):  # noqa: ANN001, ANN202
        s, z = carry
        pass_logit = jnp.where(passes & (i > 40), 2.5, -8.0)
        logits = jnp.where(s.legal_action_mask, 0.0, -jnp.inf).at[:, num - 1].add(pass_logit)
        s = jax.vmap(game.step)(s, jax.random.categorical(jax.random.fold_in(key, i), logits))
        return s, z + s.rewards[:, 0]  # a finished game's later rewards are 0

    return jax.jit(lambda s: jax.lax.fori_loop(0, game.max_moves + 2, move, (s, jnp.zeros(n))))(states)


@pytest.mark.slow
def test_score_target_is_the_margin_that_decides_z_and_ownership_is_player_zeros_view():
    game = make_game("go_7x7")
    final, z = play_to_the_end(game, jax.random.key(3), 32)
    assert bool(final.terminated.all())
    ownership, score = jax.device_get(final_targets(final, SIZE))
    x = jax.device_get(board_arrays(final))
    black_id = np.where(x.color == 0, final.current_player, 1 - final.current_player)
    sign = np.where(black_id == 0, 1, -1)
    at_cap = np.asarray(x.step_count) >= game.max_moves
    assert at_cap.any() and (~at_cap).any()  # both ends occur: scored where they stand either way
    black_margin = np.asarray(jax.vmap(game.black_margin)(final))
    for i in range(32):
        black_view = flood_fill_ownership(np.sign(x.board[i]).reshape(SIZE, SIZE)).reshape(-1)
        np.testing.assert_array_equal(ownership[i], sign[i] * black_view)
        assert score[i] == sign[i] * black_margin[i]
        if not x.is_psk[i]:  # pgx's superko loss is the one end the board does not decide
            assert np.sign(score[i]) == z[i]
    assert (np.sign(score) > 0).any() and (np.sign(score) < 0).any()


def test_sampled_targets_are_from_each_positions_player_to_move_and_games_keep_their_own_row():
    b, n = 2, 8  # 4 rows per slot
    aux = OwnershipScoreTargets(size=SIZE)
    r = rb.init_replay(n, (1,), jnp.float32, 3, finals=aux.finals, num_slots=b)
    own = jnp.asarray(np.arange(b * SIZE * SIZE).reshape(b, -1) % 3 - 1, jnp.int8)  # player 0's view
    score = jnp.array([5.5, -3.5])
    obs, pol = jnp.zeros((b, 1)), jnp.full((b, 3), 1 / 3)
    # Two moves of game 0 in each slot, players alternating; then slot 0's game ends, slot 1's goes on.
    r = rb.write(r, jnp.int32(0), obs, pol, jnp.array([0, 1]), jnp.array([0, 0]))
    r = rb.write(r, jnp.int32(2), obs, pol, jnp.array([1, 0]), jnp.array([0, 0]))
    r = rb.fill_finals(r, jnp.array([True, False]), jnp.array([0, 0]), {"ownership": own, "score": score})
    got = aux.sample(r, jnp.array([0, 2]))  # slot 0: player 0, then player 1
    np.testing.assert_array_equal(got["ownership"], np.stack([own[0], -own[0]]))
    np.testing.assert_array_equal(got["score"], [5.5, -5.5])
    assert not np.asarray(r.finals["ownership"][:, 1]).any()  # slot 1's row untouched
    # Slot 0's game 1 ends: its row is its own, game 0's stays.
    r = rb.write(r, jnp.int32(4), obs, pol, jnp.array([1, 1]), jnp.array([1, 0]))
    r = rb.fill_finals(r, jnp.array([True, True]), jnp.array([1, 0]), {"ownership": -own, "score": -score})
    got = aux.sample(r, jnp.array([0, 4, 1, 3]))
    np.testing.assert_array_equal(got["score"], [5.5, 5.5, -3.5, 3.5])  # slot 1: player 1, then 0
    np.testing.assert_array_equal(got["ownership"][1], own[0])  # player 1 of game 1 sees -(-own)


def test_augmented_ownership_gets_its_observations_symmetry():
    game = make_game("go_7x7")
    aux = OwnershipScoreTargets(size=SIZE)
    boards = random_boards(16, 1)
    own = jnp.asarray(np.stack([flood_fill_ownership(b) for b in boards]).reshape(16, -1), jnp.int8)
    # Observation planes that show the ownership: after the symmetry they must still show the targets.
    obs = jnp.stack([own.reshape(16, SIZE, SIZE) == 1, own.reshape(16, SIZE, SIZE) == -1], axis=-1)
    policy = jax.nn.softmax(jax.random.normal(jax.random.key(0), (16, game.num_actions)))
    key = jax.random.key(5)
    new_obs, new_policy, targets = aux.augment(game, key, obs, policy, {"ownership": own, "score": jnp.zeros(16)})
    assert new_obs.dtype == obs.dtype and targets["ownership"].dtype == jnp.int8
    np.testing.assert_array_equal(new_obs[..., 0], targets["ownership"].reshape(16, SIZE, SIZE) == 1)
    np.testing.assert_array_equal(new_obs[..., 1], targets["ownership"].reshape(16, SIZE, SIZE) == -1)
    plain_obs, plain_policy = augment(game, key, obs, policy)  # the same symmetries as without targets
    np.testing.assert_array_equal(new_obs, plain_obs)
    np.testing.assert_array_equal(new_policy, plain_policy)
    assert not np.array_equal(np.asarray(targets["ownership"]), np.asarray(own))


def learning_batch(n: int) -> tuple[jax.Array, dict[str, jax.Array]]:
    """n positions of random 7x7 games (observations) with the ownership and score of their own boards as seen
    by their player to move: targets a network can read off its input, different from position to position."""
    game = make_game("go_7x7")
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(7), n))
    plies = jax.random.randint(jax.random.key(8), (n,), 10, 60)

    def move(i, s):  # noqa: ANN001, ANN202
        logits = jnp.where(s.legal_action_mask, 0.0, -jnp.inf).at[:, -1].add(-4.0)
        nxt = jax.vmap(game.step)(s, jax.random.categorical(jax.random.fold_in(jax.random.key(9), i), logits))
        return where_games((i < plies) & ~nxt.terminated, nxt, s)

    states = jax.jit(lambda s: jax.lax.fori_loop(0, 60, move, s))(states)
    ownership, score = final_targets(states, SIZE)
    mover = jnp.where(states.current_player == 0, 1, -1)
    return states.observation, {"ownership": ownership * mover[:, None].astype(jnp.int8), "score": score * mover}


@pytest.mark.slow
def test_the_heads_learn_targets_that_no_constant_output_meets():
    """Some steps of the real optimizer on a fixed batch lower both auxiliary losses below what the best constant
    output (each point's mean target; the mean score) reaches: a head that outputs a constant fails this."""
    n = 64
    obs, targets = learning_batch(n)
    own = np.asarray(targets["ownership"], np.float64)
    t = (1 + own) / 2
    mean = np.clip(t.mean(axis=0), 1e-6, 1 - 1e-6)
    best_constant_ce = float(np.mean(-(t * np.log(mean) + (1 - t) * np.log(1 - mean))))
    score = np.asarray(targets["score"], np.float64)
    best_constant_mse = float(np.var(score / SIZE**2))
    assert best_constant_ce > 0.45 and best_constant_mse > 0.02  # the batch's targets vary

    config = preset("go_7x7", num_blocks=2, num_channels=16, learning_rate=3e-3, lr_warmup_steps=1, num_steps=150,
                    sgd_steps_per_step=1, weight_decay=0.0, **ON)
    aux = OwnershipScoreTargets(size=SIZE, ownership_weight=1.5, score_weight=1.0)
    first, last = fit_auxiliary_heads(config, obs, aux, targets, steps=150)
    assert float(first["ownership_loss"]) > best_constant_ce - 0.05  # it starts no better than a constant
    assert float(last["ownership_loss"]) < best_constant_ce - 0.2, (float(last["ownership_loss"]), best_constant_ce)
    assert float(last["score_loss"]) < 0.5 * best_constant_mse, (float(last["score_loss"]), best_constant_mse)
    assert float(last["ownership_std"]) > 0.2 and float(last["score_std"]) > 1.0
    assert 0.2 < float(last["ownership_head_active"]) < 0.8 and 0.2 < float(last["score_head_active"]) < 0.8


@pytest.mark.slow
def test_a_tiny_loop_with_the_heads_on_trains_them_from_the_command_line(tmp_path):
    """`--ownership_loss_weight 1.5 --score_loss_weight 0.1`: the run trains, metrics.csv shows the auxiliary
    losses and the heads alive; the same config's loop keeps per-game targets whose score agrees with z."""
    flags = [f"--{k}={v}" for k, v in {**TINY, **ON}.items()]
    run = tmp_path / "run"
    assert main(["train", "--game", "go_7x7", "--run_dir", str(run), "--no-progress", *flags]) == 0
    rows, _ = load_metrics(run)
    trained = [r for r in rows if r["sgd_applied"]]
    assert trained
    for r in trained:
        assert all(math.isfinite(r[k]) for k in ("ownership_loss", "score_loss", "ownership_std", "score_std"))
        assert r["ownership_std"] > 0 and r["score_std"] > 0
        assert 0 < r["ownership_head_active"] < 1 and 0 < r["score_head_active"] < 1

    config, params = load_model(run)  # the saved model loads with its heads, and its search ignores them
    assert config.ownership_loss_weight == 1.5 and "ownership_head" in params["params"]
    states = jax.vmap(board_game(config).init)(jax.random.split(jax.random.key(0), 2))
    logits, value = make_evaluator(config, board_game(config))(params, states)
    assert logits.shape == (2, 50) and value.shape == (2,)

    trainer = Trainer(preset("go_7x7", **TINY, **ON))
    assert isinstance(trainer.auxiliary, OwnershipScoreTargets) and isinstance(trainer.value, AuxiliaryValue)
    state = trainer.init(0)
    for _ in range(TINY["num_steps"]):
        state, m = trainer.step(state)
    replay = state.replay
    idx = jnp.flatnonzero(replay.has_target)
    assert idx.size > 0
    got = jax.device_get(trainer.auxiliary.sample(replay, idx))
    z = np.asarray(replay.value)[np.asarray(idx)]
    assert np.mean(np.sign(got["score"]) == z) > 0.95  # all but games ended by superko
    # The mover's margin is the sum of its ownership and the komi given (White) or paid (Black).
    np.testing.assert_allclose(np.abs(got["score"] - got["ownership"].sum(-1)), 9.5)


def test_off_by_default_and_at_zero_alphazero_with_no_heads_finals_or_terms():
    assert Config().ownership_loss_weight == 0.0 and Config().score_loss_weight == 0.0
    old = Config(game="go_7x7").to_dict()
    del old["ownership_loss_weight"], old["score_loss_weight"]
    assert Config.from_dict({**old, "legacy_heads": False}).score_loss_weight == 0.0  # saved before: off
    config = preset("go_7x7", **TINY, ownership_loss_weight=0.0, score_loss_weight=0.0)
    trainer = Trainer(config)
    assert isinstance(trainer.auxiliary, NoAuxiliaryTargets) and type(trainer.value) is TanhValue
    assert trainer.net.aux_heads is False
    state = trainer.abstract_state(local=True)
    assert state.replay.finals == {}
    assert not any(k.startswith(("ownership", "score")) for k in state.params["params"])
    assert not any(k.startswith(("ownership", "score")) for k in trainer.sgd_info_keys)
    on = Trainer(preset("go_7x7", **TINY, score_loss_weight=0.1))  # either weight switches both heads on
    assert on.net.aux_heads and {"ownership_loss", "score_loss"} <= set(on.sgd_info_keys)


@pytest.mark.parametrize("changes, message", [
    (dict(game="connect_four", ownership_loss_weight=1.5), "ownership_loss_weight (KataGo's ownership and score "
                                                           "targets) applies to Go only, not 'connect_four'"),
    (dict(game="chess", score_loss_weight=0.1), "score_loss_weight (KataGo's ownership and score targets) applies"),
    (dict(game="go_9x9", ownership_loss_weight=-1.0), "ownership_loss_weight must be >= 0 (0 = off), got -1.0"),
    (dict(game="go_9x9", score_loss_weight=0.1, legacy_heads=True), "needs the normalised heads"),
])
def test_bad_auxiliary_weights_are_refused_in_one_line(changes, message):
    with pytest.raises(ValueError, match=None) as error:
        Config(**changes)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_saved_models_with_the_heads_load_and_without_them_too(tmp_path):
    game = make_game("go_7x7")
    for name, weights in (("on", ON), ("off", {})):
        config = Config(game="go_7x7", num_blocks=1, num_channels=8, **weights)
        save_config(tmp_path / name, config)
        save_params(tmp_path / name, init_params(make_network(config, game), game, jax.random.key(0)))
        loaded, params = load_model(tmp_path / name)
        assert ("ownership_head" in params["params"]) == bool(weights) == make_network(loaded, game).aux_heads
