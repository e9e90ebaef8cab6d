"""Golden runs: what the loop and the searches compute, pinned, so that restructuring is checked by behaviour.

Each golden file in tests/test_data/ holds the metrics of a tiny 4-step loop (Connect Four, 7x7 Go with SAI
values, chess) with a digest of the final parameters, or a search tree per search kind. A change that alters
what azjax computes must regenerate them on purpose and say why in its commit:

    AZJAX_REGEN_GOLDEN=1 python -m pytest tests/train/test_golden.py

The tiny configs are those of other tests, so their compiled programs come from the shared cache.
Regenerated: normalised heads and the one move chooser (issue "Every game learns"); the loop runs again for
the LayerNorm in the scalar heads' hidden layer (`head_hidden_norm`); Connect Four's and chess's loops given
settings whose games end within the 4 steps, so that every golden loop pins trained weights (issue 36).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.config import preset
from azjax.games import make_game
from azjax.search import SearchSpec, run_search
from azjax.train.loop import Trainer

DATA = Path(__file__).resolve().parents[1] / "test_data"
REGEN = os.environ.get("AZJAX_REGEN_GOLDEN") == "1"
RTOL = 1e-4  # float32 reductions may differ in the last bits between CPU kinds


def _check(name: str, got: dict[str, Any]) -> None:
    file = DATA / f"{name}.json"
    if REGEN:
        DATA.mkdir(exist_ok=True)
        file.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return
    want = json.loads(file.read_text())
    assert sorted(want) == sorted(got), f"{name}: keys differ"
    for key in want:
        a, b = np.asarray(want[key], dtype=float), np.asarray(got[key], dtype=float)
        assert a.shape == b.shape, f"{name}/{key}: shape {b.shape}, golden {a.shape}"
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=1e-6, equal_nan=True, err_msg=f"{name}/{key}")


def _param_digest(params: Any) -> dict[str, list[float]]:
    """Per leaf (in tree order): sum and sum of squares."""
    leaves = [np.asarray(x, np.float64) for x in jax.tree.leaves(params)]
    return {"param_sum": [float(x.sum()) for x in leaves], "param_sq_sum": [float((x**2).sum()) for x in leaves]}


def _golden_loop(cfg) -> dict[str, Any]:
    trainer = Trainer(cfg)
    state = trainer.init(cfg.seed)
    rows: dict[str, list[float]] = {}
    for _ in range(4):
        state, m = trainer.step(state)
        for k, v in jax.device_get(m).items():
            rows.setdefault(f"metric_{k}", []).append(float(v))
    return {**rows, **_param_digest(state.params)}


# Each golden loop trains: its games end within the pinned steps (8 moves a step of Connect Four; chess adjudicated
# after 12 plies), so SGD runs and the pinned loss and final parameters are those of trained weights.
CONNECT_FOUR_TRAINS = {"moves_per_step": 8, "sgd_steps_per_step": 2}
CHESS_TRAINS = {"adjudicate_plies": 12, "sgd_steps_per_step": 2}


@pytest.mark.slow
def test_connect_four_loop_matches_its_golden_run(tiny_overrides: dict) -> None:
    _check("loop_connect_four", _golden_loop(preset("connect_four", **{**tiny_overrides, **CONNECT_FOUR_TRAINS})))


@pytest.mark.slow
def test_sai_7x7_loop_matches_its_golden_run(sai_tiny_overrides: dict) -> None:
    _check("loop_go_7x7_sai", _golden_loop(preset("go_7x7", **sai_tiny_overrides)))


@pytest.mark.slow
def test_chess_loop_matches_its_golden_run(chess_tiny_overrides: dict) -> None:
    _check("loop_chess", _golden_loop(preset("chess", **{**chess_tiny_overrides, **CHESS_TRAINS})))


@pytest.mark.parametrize("name", ["loop_connect_four", "loop_go_7x7_sai", "loop_chess"])
def test_every_golden_loop_pins_trained_weights(name: str) -> None:
    """A golden whose steps never ran SGD would pin initialisation and self-play only, not learning."""
    want = json.loads((DATA / f"{name}.json").read_text())
    assert max(want["metric_sgd_applied"]) > 0
    assert all(np.isfinite(loss) for loss, sgd in zip(want["metric_loss"], want["metric_sgd_applied"], strict=True)
               if sgd > 0)


def _evaluator(params: Any, states: Any) -> tuple[jax.Array, jax.Array]:
    """A fixed, position-dependent evaluator: logits and value from the observation's sums."""
    obs = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32)
    logits = jnp.sin(jnp.arange(states.legal_action_mask.shape[-1]) * (1.0 + obs.sum(-1, keepdims=True)))
    return logits, jnp.tanh(0.1 * obs.sum(-1) - 0.5)


@pytest.mark.parametrize("kind,n_scl", [("gumbel", 0), ("puct", 0), ("puct", 3)])
def test_search_tree_matches_its_golden_tree(kind: str, n_scl: int) -> None:
    game = make_game("connect_four")
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 3))
    states = jax.vmap(game.step)(states, jnp.array([3, 2, 6], jnp.int32))
    spec = SearchSpec(kind=kind, num_simulations=24, dirichlet_fraction=0.25, n_scl=n_scl)
    out = jax.jit(run_search, static_argnums=(0, 1, 2))(spec, game, _evaluator, None, jax.random.key(1), states)
    tree = jax.device_get(out.search_tree)
    _check(f"tree_{kind}{f'_scl{n_scl}' if n_scl else ''}", {
        "action": out.action.tolist(), "action_weights": np.asarray(out.action_weights).tolist(),
        "node_visits": tree.node_visits.tolist(), "node_values": tree.node_values.tolist(),
        "children_index": tree.children_index.tolist(), "parents": tree.parents.tolist(),
    })
