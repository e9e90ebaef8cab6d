"""Config: presets, validation (errors name the field), JSON round trip, command-line parsing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from azjax.config import METHODS, PRESETS, Config, field_groups, inert_contempt, methods_on, parse_field, preset
from azjax.games import GAMES


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("name", ["quick", "full"])
def test_presets_exist_and_validate(game: str, name: str) -> None:
    assert name in PRESETS[game]
    config = preset(game, name)
    assert config.game == game
    for key, value in PRESETS[game][name].items():
        assert getattr(config, key) == value


def test_preset_overrides_and_errors() -> None:
    config = preset("go_7x7", "quick", num_simulations=8, komi=7.5)
    assert config.num_simulations == 8 and config.komi == 7.5
    with pytest.raises(ValueError, match="bogus"):
        preset("bogus")
    with pytest.raises(ValueError, match="huge"):
        preset("chess", "huge")
    with pytest.raises(ValueError, match="num_simulations"):
        preset("chess", "quick", num_simulations=0)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_simulations": -1}, "num_simulations"),
        ({"num_simulations": 0}, "num_simulations"),
        ({"search": "alphabeta"}, "search"),
        ({"compute_dtype": "float16"}, "compute_dtype"),
        ({"num_simulations": "32"}, "num_simulations"),
        ({"num_simulations": 2.5}, "num_simulations"),
        ({"num_simulations": True}, "num_simulations"),
        ({"augment": 1}, "augment"),
        ({"learning_rate": "fast"}, "learning_rate"),
        ({"learning_rate": -1e-3}, "learning_rate"),
        ({"komi": "7.5"}, "komi"),
        ({"start": None}, "start"),
        ({"game": "checkers"}, "checkers"),
        ({"dirichlet_fraction": 1.5}, "dirichlet_fraction"),
        ({"dirichlet_alpha": 0.0}, "dirichlet_alpha"),
        ({"lr_end_fraction": 2.0}, "lr_end_fraction"),
        ({"swa_decay": 1.0}, "swa_decay must be in \\[0, 1\\)"),
        ({"value_probe_games": 3}, "value_probe_games must be even"),
        ({"min_replay_size": 10, "replay_size": 5, "batch_size": 4}, "min_replay_size"),
        ({"batch_size": 64, "replay_size": 32, "min_replay_size": 16}, "batch_size"),
        ({"gumbel_scale": -1.0}, "gumbel_scale"),
        ({"pb_c_init": -1.0}, "pb_c_init"),
        # komi belongs to Go and must be a half-integer (no draws), as make_game demands.
        ({"game": "go_7x7", "komi": 7.0}, "komi"),
        ({"game": "connect_four", "komi": 7.5}, "komi"),
        ({"game": "go_9x9", "start": "queen_odds"}, "start"),
        ({"game": "go_9x9", "adjudicate_plies": 200}, "adjudicate_plies .* applies to chess only"),
        ({"game": "chess", "adjudicate_plies": 600}, "adjudicate_plies must be in"),
        ({"game": "chess", "adjudicate_plies": 200, "adjudicate_margin": 0.0}, "adjudicate_margin"),
        ({"game": "chess", "adjudicate_plies": 200, "adjudicate_scale": 1.5}, "adjudicate_scale must be in"),
        ({"game": "go_9x9", "twofold_draws": True}, "twofold_draws applies to chess only"),
    ],
)
def test_bad_values_name_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Config(**changes)
    with pytest.raises(ValueError, match=field):
        Config().replace(**changes)


def test_good_komi_and_start() -> None:
    assert Config(game="go_7x7", komi=-0.5).komi == -0.5
    assert Config(game="go_9x9", komi=None).komi is None
    assert Config(game="chess", start="rook_odds").start == "rook_odds"


def test_int_given_for_float_field_is_stored_as_float() -> None:
    config = Config(learning_rate=1, game="go_9x9", komi=7.5)
    assert isinstance(config.learning_rate, float)
    assert Config.from_json(config.to_json()).to_json() == config.to_json()


@pytest.mark.parametrize("config", [Config(), preset("go_9x9", "full", komi=5.5), preset("chess", "quick")])
def test_json_round_trip(config: Config) -> None:
    text = config.to_json()
    assert json.loads(text) == dataclasses.asdict(config)
    back = Config.from_json(text)
    assert back == config
    assert back.to_json() == text
    assert Config.from_dict(config.to_dict()) == config


def test_from_dict_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="num_simulatoins"):
        Config.from_dict({"num_simulatoins": 3})
    with pytest.raises(ValueError, match="num_simulations"):
        Config.from_json('{"num_simulations": -3}')


def test_describe_lists_every_field() -> None:
    text = Config().describe()
    for f in dataclasses.fields(Config):
        assert f"{f.name} = " in text
    assert "  search-contempt:\n    n_scl = 0" in text


def test_every_field_belongs_to_exactly_one_group() -> None:
    grouped = [name for names in field_groups().values() for name in names]
    assert sorted(grouped) == sorted(f.name for f in dataclasses.fields(Config))


def test_alphazero_switches_on_no_method_and_each_switch_names_its_own() -> None:
    assert methods_on(Config()) == []
    assert methods_on(Config(n_scl=5)) == ["search-contempt"]
    assert methods_on(Config(game="go_7x7", value_head="sai")) == ["SAI sigmoid-komi values"]
    assert methods_on(Config(value_head="wdl")) == ["Lc0's win/draw/loss head"]
    assert methods_on(Config(game="chess", twofold_draws=True)) == ["Lc0's two-fold draws"]
    assert methods_on(Config(td_lambda=0.7, full_search_prob=0.25)) == ["TDLeaf(lambda) targets",
                                                                          "KataGo's playout caps"]
    for method in METHODS:  # a method's fields at their defaults leave it off
        assert not method.on(Config().replace(**{name: getattr(Config(), name) for name in method.fields}))


def test_search_contempt_at_or_above_every_simulation_budget_is_named_inert() -> None:
    hour = preset("connect_four", "hour")  # 16 simulations a move
    assert inert_contempt(hour) is None  # off is AlphaZero, not a contempt setting
    assert inert_contempt(hour.replace(n_scl=5)) is None
    assert inert_contempt(hour.replace(n_scl=28)).startswith("n_scl 28 is inert at 16 simulations a move")
    assert inert_contempt(hour.replace(n_scl=16)) is not None  # 16 visits complete no node's 16th child visit
    assert inert_contempt(hour.replace(n_scl=28, num_simulations=64)) is None
    # Playout caps: the full searches (here 64) are where it can act; fast ones of 8 are not the budget that counts.
    capped = hour.replace(n_scl=28, num_simulations=64, full_search_prob=0.25, fast_simulations=8)
    assert inert_contempt(capped) is None and inert_contempt(capped.replace(n_scl=64)) is not None


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("num_simulations", "64", 64),
        ("seed", "-3", -3),
        ("learning_rate", "1e-3", 1e-3),
        ("gumbel_scale", "2", 2.0),
        ("augment", "false", False),
        ("augment", "True", True),
        ("augment", "0", False),
        ("augment", "yes", True),
        ("komi", "None", None),
        ("komi", "none", None),
        ("komi", "-6.5", -6.5),
        ("start", "queen_odds", "queen_odds"),
        ("search", "puct", "puct"),
        ("compute_dtype", "bfloat16", "bfloat16"),
    ],
)
def test_parse_field(name: str, text: str, expected: Any) -> None:
    value = parse_field(name, text)
    assert value == expected and type(value) is type(expected)
    game = {"komi": "go_9x9", "start": "chess"}.get(name, "connect_four")
    Config(**{"game": game, name: value})


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("num_simulations", "many", "num_simulations"),
        ("num_simulations", "2.5", "num_simulations"),
        ("learning_rate", "fast", "learning_rate"),
        ("augment", "maybe", "augment"),
        ("komi", "seven", "komi"),
        ("no_such_field", "1", "no_such_field"),
    ],
)
def test_parse_field_errors(name: str, text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_field(name, text)


def test_parse_field_every_field_round_trips() -> None:
    """Every field's default, written as text, parses back to itself (the CLI can set any field)."""
    for f in dataclasses.fields(Config):
        value = getattr(Config(), f.name)
        assert parse_field(f.name, str(value)) == value, f.name


def test_a_saved_config_without_value_target_q_resumes_with_the_q_it_was_trained_on():
    """Runs saved before `value_target_q` existed mixed the root's mean value into their targets; new configs
    default to the policy target's value and save the field explicitly."""
    old = Config().to_dict()
    del old["value_target_q"]
    assert Config.from_dict(old).value_target_q == "root"
    assert Config().value_target_q == "policy" and Config.from_json(Config().to_json()).value_target_q == "policy"
    with pytest.raises(ValueError, match="value_target_q must be one of policy, root"):
        Config(value_target_q="leaf")


def test_a_saved_config_with_n_scl_null_loads_with_search_contempt_off():
    """config.json files written when None meant "off" (`"n_scl": null`) load with today's off value, 0."""
    old = {**Config().to_dict(), "n_scl": None}
    assert Config.from_dict(old).n_scl == 0 and Config.from_dict(old) == Config()
    assert Config().n_scl == 0 and Config.from_json(Config(n_scl=5).to_json()).n_scl == 5
    with pytest.raises(ValueError, match="n_scl must be >= 0"):
        Config(n_scl=-1)


def test_a_saved_config_without_legacy_heads_is_a_model_with_the_old_heads():
    """config.json files written before normalised heads existed load with `legacy_heads=True`, so the
    network built for them matches their parameters; new configs save the field explicitly."""
    old = Config().to_dict()
    del old["legacy_heads"]
    assert Config.from_dict(old).legacy_heads is True
    assert Config.from_json(Config().to_json()).legacy_heads is False
    assert Config().legacy_heads is False and preset("go_7x7", "sai").legacy_heads is False


def test_the_9x9_sai_preset_is_the_committed_9x9_models_recipe_but_its_warm_start():
    repo = Path(__file__).resolve().parents[1]
    committed = Config.from_json((repo / "results" / "go_9x9" / "sai_pooled_from_7x7" / "config.json").read_text())
    assert committed.init_from  # the run continued the 7x7 network, named on the command line
    assert preset("go_9x9", "sai") == committed.replace(init_from="")
    # Every field that shapes the network is the 7x7 `sai` preset's with the pooled heads, so every layer carries.
    seven = preset("go_7x7", "sai", global_pooling=True, ownership_loss_weight=1.5, score_loss_weight=0.1)
    for name in ("value_head", "num_blocks", "num_channels", "global_pooling", "legacy_heads", "colour_plane"):
        assert getattr(preset("go_9x9", "sai"), name) == getattr(seven, name), name


def test_the_9x9_loan_preset_is_the_sai_recipe_at_a_gpus_size_with_the_same_replay_ratio():
    cpu, loan = preset("go_9x9", "sai"), preset("go_9x9", "loan")
    assert loan.init_from == "" and loan.replay_ratio == cpu.replay_ratio == 1.0
    assert loan.num_blocks * loan.num_channels ** 2 > 4 * cpu.num_blocks * cpu.num_channels ** 2  # a bigger network
    assert loan.num_simulations > cpu.num_simulations and loan.lr_end_fraction == 1.0  # a cut run: the same schedule
    methods = ("value_head", "global_pooling", "ownership_loss_weight", "score_loss_weight", "branch_prob",
               "max_branches", "swa_decay", "temperature_moves")
    assert all(getattr(loan, name) == getattr(cpu, name) for name in methods)


def test_the_chess_hour_preset_is_the_committed_chess_models_recipe():
    """`scripts/chess_hour.sh` with its defaults trains what results/models/chess_hour was trained with."""
    repo = Path(__file__).resolve().parents[1]
    committed = Config.from_json((repo / "results" / "models" / "chess_hour" / "config.json").read_text())
    assert preset("chess", "hour") == committed


def test_the_replay_ratio_names_positions_trained_per_position_played_and_sets_the_sgd_steps():
    quick = preset("go_9x9", "quick")  # 2 SGD steps of 256 per 128 games x 8 moves
    assert quick.replay_ratio == 0.5
    four = quick.with_replay_ratio(4.0)
    assert four.sgd_steps_per_step == 16 and four.replay_ratio == 4.0
    assert quick.with_replay_ratio(0.01).sgd_steps_per_step == 1  # at least one SGD step
    with pytest.raises(ValueError, match="replay_ratio must be > 0"):
        quick.with_replay_ratio(0.0)


def test_replay_ratio_on_the_command_line_sets_the_steps_and_refuses_both_spellings(tmp_path, capsys):
    from azjax.cli import main

    out = tmp_path / "plan.json"
    assert main(["plan", "--game", "go_9x9", "--replay_ratio", "4", "--num_blocks", "1", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["config"]["sgd_steps_per_step"] == 16
    assert main(["plan", "--game", "go_9x9", "--replay_ratio", "4", "--sgd_steps_per_step", "3"]) == 2
    assert "give --replay_ratio or --sgd_steps_per_step, not both" in capsys.readouterr().err
