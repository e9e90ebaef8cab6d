"""The network's heads cannot die silently: normalised head convolutions, head health in the loop's metrics,
and a warning when a head's output stops varying."""

from __future__ import annotations

import argparse
import io

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import build
from azjax import replay as rb
from azjax.build import init_params, make_network
from azjax.cli import main
from azjax.config import Config, preset
from azjax.engines.gtp import GTPEngine
from azjax.engines.loading import start_engine
from azjax.games import make_game
from azjax.network import HeadConv, ScalarHead, first_player_plane, head_health, liberty_planes
from azjax.train.driver import HeadWatch
from azjax.train.loop import Trainer, with_head_health


def _value_spread(trainer: Trainer, params, obs: jax.Array) -> float:
    """The std over `obs` [N, ...] of the value (tanh net) or alpha (SAI net)."""
    out = trainer.net.apply(params, obs)
    return float(jnp.std(out[1]))


def _constant_head(params):
    """The same network with the value head's last layer zeroed: it outputs its bias on every position."""
    flat = flax.traverse_util.flatten_dict(params)
    last = max(k for k in flat if k[1] == "value_head" and k[-1] == "kernel")
    flat[last] = jnp.zeros_like(flat[last])
    return flax.traverse_util.unflatten_dict(flat)


@pytest.mark.slow
@pytest.mark.parametrize("game", ["go_9x9", "chess"])
def test_value_head_output_varies_across_positions_after_a_short_run(game: str, tiny_overrides: dict,
                                                                       chess_tiny_overrides: dict) -> None:
    """go_9x9: random games end within 162 moves, so 6 steps of 32 moves finish games and train on their
    outcomes. chess: games last up to 512 plies, too long for a test; after one step the replay's positions
    get random outcomes and the loop's SGD trains on them."""
    if game == "chess":
        cfg = preset(game, **chess_tiny_overrides)
    else:
        cfg = preset(game, **{**tiny_overrides, "num_envs": 4, "batch_size": 4, "num_simulations": 2,
                              "min_replay_size": 4, "moves_per_step": 32, "num_steps": 6, "replay_size": 256})
    trainer = Trainer(cfg)
    state = trainer.init(0)
    stds = []
    for step in range(cfg.num_steps):
        state, m = trainer.step(state)
        assert int(m["unvisited_greedy_moves"]) == 0
        if game == "chess" and step == 0:
            outcomes = jax.random.choice(jax.random.key(step), jnp.array([-1.0, 0.0, 1.0]), state.replay.value.shape)
            state = state.replace(replay=state.replay.replace(value=outcomes, has_target=state.replay.game_id >= 0))
        if bool(m["sgd_applied"]):
            stds.append(float(m["value_std"]))
            assert 0.0 < float(m["value_head_active"]) < 1.0 and 0.0 < float(m["policy_head_active"]) < 1.0
    assert stds and min(stds) > 1e-3, stds
    written = jnp.asarray(np.flatnonzero(np.asarray(state.replay.game_id) >= 0))
    obs = trainer.game.unpack_observation(rb.stored_obs(state.replay, written))
    assert _value_spread(trainer, state.params, obs) > 1e-3
    # The check fails for a network whose value is a constant.
    assert _value_spread(trainer, _constant_head(state.params), obs) < 1e-6


def test_head_conv_keeps_units_active_when_every_preactivation_is_negative() -> None:
    """A 1x1 conv whose outputs are all below zero leaves no unit active after a plain ReLU (the head that
    died on Go and chess); the normalisation over the board brings about half of them back."""
    head = HeadConv(filters=4, dtype=jnp.float32)

    # numpy's draw: XLA's CPU compile of a jax.random.normal this size alone takes seconds.
    x = jnp.asarray(np.random.default_rng(0).standard_normal((16, 9, 9, 8)), jnp.float32)

    @jax.jit  # one program instead of one eager dispatch (and compile) per op
    def plain_and_normalised_active(x):
        params = head.init(jax.random.key(1), x)
        conv = params["params"]["Conv_0"]
        conv["kernel"] = -jnp.abs(conv["kernel"]) * 0.01
        conv["bias"] = jnp.full_like(conv["bias"], -10.0)
        plain = jnp.mean(jax.nn.relu(x @ conv["kernel"][0, 0] + conv["bias"]) > 0)
        _, variables = head.apply(params, x, mutable=["intermediates"])
        return plain, variables["intermediates"]["active"][0]

    plain, active = map(float, plain_and_normalised_active(x))
    assert plain == 0.0
    assert 0.3 < active < 0.7


def test_scalar_head_hidden_layer_cannot_switch_every_unit_off() -> None:
    """A hidden layer whose units are all below zero on a position gives that position the output bias alone
    (the chess value that was -0.008 on every opening); normalised over its units, it stays a function of the
    position."""
    x = jnp.asarray(np.random.default_rng(0).standard_normal((16, 8, 8, 8)), jnp.float32)

    @jax.jit
    def outputs(x):
        result = []
        for hidden_norm in (False, True):
            head = ScalarHead(filters=4, hidden=8, dtype=jnp.float32, hidden_norm=hidden_norm)
            params = head.init(jax.random.key(1), x)
            dense = params["params"]["Dense_0"]
            dense["bias"] = jnp.full_like(dense["bias"], -100.0)  # every hidden pre-activation below zero
            result.append(head.apply(params, x))
        return result

    plain, normalised = map(np.asarray, outputs(x))
    assert np.std(plain) == 0.0
    assert np.std(normalised) > 1e-3


def test_old_configs_load_with_the_heads_they_were_saved_with() -> None:
    """A config.json from before `head_hidden_norm` (or `legacy_heads`) existed is a model with those heads."""
    saved = {k: v for k, v in Config().to_dict().items() if k not in ("head_hidden_norm", "legacy_heads")}
    old = Config.from_dict(saved)
    assert not old.head_hidden_norm and old.legacy_heads
    assert Config.from_dict(Config().to_dict()) == Config()


def test_head_health_names_every_head_of_both_networks() -> None:
    for game, value_head in (("connect_four", "tanh"), ("go_7x7", "sai")):
        cfg = preset(game, num_blocks=1, num_channels=8, value_head=value_head)
        g = make_game(game)
        net = make_network(cfg, g)

        @jax.jit  # one program: eager op-by-op dispatch of the game's init and the net compiles hundreds
        def health_of(key, net=net, g=g):
            params = init_params(net, g, key)
            states = jax.vmap(g.init)(jax.random.split(jax.random.key(1), 4))
            _, variables = net.apply(params, states.observation, mutable=["intermediates"])
            return head_health(variables["intermediates"])

        health = health_of(jax.random.key(0))
        assert sorted(health) == sorted(c for c in build.value_head(cfg).columns if c.endswith("_active"))


def _rows(values: list[float], column: str = "value_std") -> list[dict]:
    return [{"step": i + 1, "sgd_applied": 1, column: v, "value_head_active": 0.5} for i, v in enumerate(values)]


def test_head_watch_warns_once_when_a_head_output_stays_constant() -> None:
    watch = HeadWatch(["value_std", "value_head_active"], patience=5)
    said = [w for row in _rows([0.3] * 3 + [1e-7] * 10) for w in watch.update(row)]
    assert len(said) == 1
    assert "value head" in said[0] and "steps 4-8" in said[0]


def test_head_watch_stays_quiet_for_a_live_head_and_before_sgd_starts() -> None:
    watch = HeadWatch(["value_std", "value_head_active"], patience=5)
    rows = [{"step": i, "sgd_applied": 0, "value_std": float("nan"), "value_head_active": float("nan")}
            for i in range(10)]
    rows += _rows([0.2, 1e-7, 1e-7, 0.1] * 5)  # dips shorter than the patience
    assert not [w for row in rows for w in watch.update(row)]


def test_head_watch_warns_when_no_unit_after_a_head_conv_is_active() -> None:
    watch = HeadWatch(["value_std", "value_head_active"], patience=3)
    rows = [{"step": i, "sgd_applied": 1, "value_std": 0.3, "value_head_active": 0.0} for i in range(4)]
    said = [w for row in rows for w in watch.update(row)]
    assert len(said) == 1 and "fraction of active units" in said[0]


def test_a_model_with_the_old_heads_reports_their_health_so_it_can_resume_training() -> None:
    cfg = preset("connect_four", num_blocks=1, num_channels=8, legacy_heads=True, head_hidden_norm=False)
    net = make_network(cfg, make_game("connect_four"))
    obs = jnp.zeros((2, 6, 7, 2))
    params = net.init(jax.random.key(0), obs)
    (logits, value), health = with_head_health(net.apply)(params, obs)
    assert logits.shape == (2, 7) and value.shape == (2,)
    assert set(health) == {"policy_head_active", "value_head_active"}
    assert all(0.0 <= float(v) <= 1.0 for v in health.values())
    Trainer(cfg)  # builds its loss with the heads' health, as a resumed run does


def test_the_colour_plane_says_whether_the_player_to_move_moved_first() -> None:
    """Connect Four after 0, 1, 2 and 3 moves: the first player is to move after an even number."""
    g = make_game("connect_four")
    states = [g.init(jax.random.key(0))]
    for column in (3, 3, 4):
        states.append(g.step(states[-1], jnp.int32(column)))
    obs = jnp.stack([s.observation for s in states]).astype(jnp.float32)
    plane = first_player_plane(obs)
    assert plane.shape == (4, 6, 7, 1)
    np.testing.assert_array_equal(np.asarray(plane).reshape(4, -1).min(1), [1, 0, 1, 0])
    np.testing.assert_array_equal(np.asarray(plane).reshape(4, -1).max(1), [1, 0, 1, 0])


def test_a_network_with_the_colour_plane_reads_one_more_input_channel_and_uses_it() -> None:
    g = make_game("connect_four")
    plain = make_network(preset("connect_four", num_blocks=1, num_channels=8), g)
    coloured = make_network(preset("connect_four", num_blocks=1, num_channels=8, colour_plane=True), g)
    stem = lambda params: params["params"]["Conv_0"]["kernel"].shape  # noqa: E731
    assert stem(init_params(plain, g, jax.random.key(0))) == (3, 3, 2, 8)
    params = init_params(coloured, g, jax.random.key(0))
    assert stem(params) == (3, 3, 3, 8)
    # The plane's weights alone: the same stones read as "first player to move" or not give other outputs.
    flat = flax.traverse_util.flatten_dict(params)
    flat[("params", "Conv_0", "kernel")] = flat[("params", "Conv_0", "kernel")].at[:, :, :2].set(0.0)
    params = flax.traverse_util.unflatten_dict(flat)
    empty = g.init(jax.random.key(0)).observation[None].astype(jnp.float32)
    one_stone = g.step(g.init(jax.random.key(0)), jnp.int32(3)).observation[None].astype(jnp.float32)
    assert not np.allclose(coloured.apply(params, empty)[1], coloured.apply(params, one_stone)[1])


def test_the_colour_plane_is_for_connect_four_and_old_configs_have_none() -> None:
    with pytest.raises(ValueError, match="colour_plane applies to connect_four only"):
        preset("go_7x7", colour_plane=True)
    saved = {k: v for k, v in preset("connect_four").to_dict().items() if k != "colour_plane"}
    assert Config.from_dict(saved).colour_plane is False


# ---------------------------------------------------------------- KataGo's liberty features (Go)


def _liberties_by_search(own: np.ndarray, opponent: np.ndarray) -> np.ndarray:
    """[H, W] int: each stone's chain's distinct liberties, by a flood fill from every stone (0 off the stones)."""
    h, w = own.shape
    colour = own.astype(int) - opponent.astype(int)
    out = np.zeros((h, w), int)
    for start in zip(*np.nonzero(colour), strict=True):
        chain, frontier, liberties = {start}, [start], set()
        while frontier:
            r, c = frontier.pop()
            for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if 0 <= rr < h and 0 <= cc < w:
                    if colour[rr, cc] == 0:
                        liberties.add((rr, cc))
                    elif colour[rr, cc] == colour[start] and (rr, cc) not in chain:
                        chain.add((rr, cc))
                        frontier.append((rr, cc))
        out[start] = len(liberties)
    return out


def test_the_liberty_planes_mark_the_stones_of_chains_with_one_two_and_three_liberties() -> None:
    """Positions of random 9x9 games, against a flood fill of each stone's chain."""
    g = make_game("go_9x9")
    keys = jax.random.split(jax.random.key(0), 8)

    def play(key: jax.Array) -> jax.Array:
        def move(state, k):  # noqa: ANN001, ANN202
            legal = state.legal_action_mask[:-1]  # no passes: the board fills up
            action = jax.random.categorical(k, jnp.where(legal, 0.0, -jnp.inf))
            state = g.step(state, jnp.where(legal.any(), action, g.num_actions - 1))
            return state, state.observation
        return jax.lax.scan(move, g.init(key), jax.random.split(key, 70))[1][9::10]

    obs = jax.jit(jax.vmap(play))(keys).reshape(-1, 9, 9, 17).astype(jnp.float32)  # plies 10, 20, ..., 70
    planes = np.asarray(jax.jit(liberty_planes)(obs))
    assert planes.shape == (obs.shape[0], 9, 9, 3)
    seen = np.zeros(3, int)
    for o, got in zip(np.asarray(obs), planes, strict=True):
        count = _liberties_by_search(o[..., 0] > 0, o[..., 1] > 0)
        stones = (o[..., 0] + o[..., 1]) > 0
        for k in (1, 2, 3):
            np.testing.assert_array_equal(got[..., k - 1], stones & (count == k))
            seen[k - 1] += int((stones & (count == k)).sum())
    assert (seen > 0).all(), seen  # the positions hold chains of every kind


def test_a_network_with_liberty_planes_reads_three_more_input_channels_and_uses_them() -> None:
    g = make_game("go_7x7")
    plain = make_network(preset("go_7x7", num_blocks=1, num_channels=8), g)
    with_liberties = make_network(preset("go_7x7", num_blocks=1, num_channels=8, liberty_planes=True), g)
    stem = lambda params: params["params"]["Conv_0"]["kernel"].shape  # noqa: E731
    assert stem(init_params(plain, g, jax.random.key(0))) == (3, 3, 17, 8)
    params = init_params(with_liberties, g, jax.random.key(0))
    assert stem(params) == (3, 3, 20, 8)
    # The liberty planes' weights alone: a stone in atari and the same stone free give other outputs.
    flat = flax.traverse_util.flatten_dict(params)
    flat[("params", "Conv_0", "kernel")] = flat[("params", "Conv_0", "kernel")].at[:, :, :17].set(0.0)
    params = flax.traverse_util.unflatten_dict(flat)
    obs = np.zeros((2, 7, 7, 17), np.float32)
    obs[:, 3, 3, 0] = 1.0  # the mover's stone in the centre: 4 liberties
    obs[1, [2, 4, 3], [3, 3, 2], 1] = 1.0  # three opponent stones around it: 1
    out = with_liberties.apply(params, jnp.asarray(obs))
    assert not np.allclose(out[1][0], out[1][1])


@pytest.mark.slow
def test_a_tiny_go_loop_trains_with_liberty_planes_from_the_command_line_and_its_model_plays_by_gtp(tmp_path) -> None:
    tiny = ["--num_envs", "4", "--num_simulations", "4", "--moves_per_step", "8", "--replay_size", "128",
            "--min_replay_size", "8", "--batch_size", "8", "--num_blocks", "1", "--num_channels", "8",
            "--eval_every", "0", "--checkpoint_every", "2", "--lr_warmup_steps", "1", "--num_steps", "2",
            "--sgd_steps_per_step", "1", "--liberty_planes", "true"]
    run = tmp_path / "run"
    assert main(["train", "--game", "go_7x7", "--run_dir", str(run), "--no-progress", *tiny]) == 0
    config, params = build.load_model(run)
    assert config.liberty_planes and params["params"]["Conv_0"]["kernel"].shape[2] == 20
    args = argparse.Namespace(checkpoint=str(run), visits=4, n_scl=None, search=None, seed=0)
    out = io.StringIO()
    GTPEngine(start_engine(args, "gtp"), io.StringIO("boardsize 7\ngenmove b\ngenmove w\nquit\n"), out).run()
    replies = out.getvalue().split("\n\n")
    assert all(r.startswith("= ") for r in replies[1:3]), replies


def test_liberty_planes_are_for_go_and_old_configs_have_none() -> None:
    with pytest.raises(ValueError, match="liberty_planes .* applies to Go only"):
        preset("chess", liberty_planes=True)
    saved = {k: v for k, v in preset("go_9x9").to_dict().items() if k != "liberty_planes"}
    assert Config.from_dict(saved).liberty_planes is False


# ---------------------------------------------------------------- KataGo's global pooling (Go)


def _pooled(game: str, **overrides: object) -> tuple[object, object]:
    config = preset(game, num_blocks=2, num_channels=8, global_pooling=True, **overrides)
    g = make_game(game)
    return make_network(config, g), g


@pytest.mark.slow
def test_with_global_pooling_one_networks_parameters_play_every_go_board_size() -> None:
    from azjax.train.warm_start import layers_to_copy

    net7, game7 = _pooled("go_7x7", ownership_loss_weight=1.5, score_loss_weight=0.1)
    net9, game9 = _pooled("go_9x9", ownership_loss_weight=1.5, score_loss_weight=0.1)
    params7 = init_params(net7, game7, jax.random.key(0))
    params9 = init_params(net9, game9, jax.random.key(1))
    assert jax.tree.map(jnp.shape, params7) == jax.tree.map(jnp.shape, params9)
    copied, fresh = layers_to_copy(params9, params7, "the 7x7 model")
    assert fresh == () and any("GlobalPoolBlock_0" in p for p in copied)  # a 7x7 run hands a 9x9 run everything
    obs = jax.random.bernoulli(jax.random.key(2), 0.3, (3, *game9.observation_shape)).astype(jnp.float32)
    logits, value = net9.apply(params7, obs)
    assert logits.shape == (3, 82) and value.shape == (3,)
    assert np.isfinite(np.asarray(logits)).all() and np.ptp(np.asarray(value)) > 0


def test_global_pooling_off_leaves_the_network_as_it_was_and_on_adds_pooling_blocks() -> None:
    game = make_game("go_7x7")
    plain = init_params(make_network(preset("go_7x7", num_blocks=2, num_channels=8), game), game, jax.random.key(0))
    pooled = init_params(_pooled("go_7x7")[0], game, jax.random.key(0))
    assert "GlobalPoolBlock_0" not in plain["params"] and "Dense_0" in plain["params"]  # the flattened-board policy
    assert set(pooled["params"]) == {"Conv_0", "ResBlock_0", "GlobalPoolBlock_0", "LayerNorm_0", "policy_head",
                                     "value_head"}


def test_a_pooled_networks_value_reads_the_whole_board() -> None:
    # A stone anywhere on the board can move the value: the pooled head sees every point, not one region.
    net, game = _pooled("go_9x9")
    params = init_params(net, game, jax.random.key(3))
    empty = jnp.zeros((1, *game.observation_shape))
    corners = [empty.at[0, r, c, 0].set(1.0) for r, c in ((0, 0), (0, 8), (8, 0), (8, 8))]
    values = np.asarray(net.apply(params, jnp.concatenate([empty, *corners]))[1])
    assert np.all(np.abs(values[1:] - values[0]) > 0)


def test_global_pooling_is_for_go_and_needs_the_normalised_heads() -> None:
    for game in ("chess", "connect_four"):
        with pytest.raises(ValueError, match="global_pooling applies to Go only"):
            preset(game, global_pooling=True)
    with pytest.raises(ValueError, match="global_pooling needs the normalised heads"):
        preset("go_9x9", global_pooling=True, legacy_heads=True)
    assert Config.from_dict({"game": "go_9x9"}).global_pooling is False  # a config.json saved before it existed
