"""A run that starts from another model's weights (`--init_from MODEL`): every layer whose shape is the same in both
networks is copied, the others keep their fresh initialisation.

The trunk (the stem and the residual blocks) and the heads' 1x1 convolutions do not depend on the board, so a
network trained on 7x7 Go hands them to a 9x9 run; the heads' dense layers, which read the flattened board, start
afresh, unless both use KataGo's global pooling (`global_pooling`): then no layer reads the board's size and all
of them carry over. A trunk that differs (blocks, channels, input planes) is refused: nothing would carry over.

    source = load_source(config)                 # before the run directory is written: a bad path is one line
    params, report = warm_start(params, source, config.init_from)  # report.copied / .fresh: parameter paths
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from azjax.build import load_model
from azjax.config import Config

# The stem and the residual blocks (`azjax.network.PolicyValueNet`).
TRUNK_PREFIXES = ("Conv_0", "ResBlock_", "GlobalPoolBlock_")


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """What `warm_start` copied: parameter paths (`params/ResBlock_0/Conv_0/kernel`, ...)."""

    source: str
    copied: tuple[str, ...]
    fresh: tuple[str, ...]

    def describe(self) -> str:
        fresh = ", ".join(self.fresh) if self.fresh else "none"
        return (f"warm start from {self.source}: {len(self.copied)} parameter arrays copied, "
                f"{len(self.fresh)} fresh ({fresh})")


def load_source(config: Config) -> tuple[Config, Any]:
    """(config, params) of `config.init_from`; raises a one-line error for a missing or damaged model."""
    source_config, params = load_model(config.init_from)
    if source_config.value_head != config.value_head:
        raise ValueError(f"init_from {config.init_from} has a {source_config.value_head!r} value head, this run a "
                         f"{config.value_head!r} one")
    return source_config, params


def _paths(tree: Any) -> dict[str, Any]:
    return {"/".join(str(getattr(k, "key", k)) for k in path): leaf
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def layers_to_copy(params: Any, source_params: Any, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(copied, fresh) parameter paths of `params` (arrays or shapes) given the source's; raises ValueError naming
    the first layer when the trunks differ."""
    mine, theirs = _paths(params), _paths(source_params)
    trunk = [p for p in mine if p.split("/")[1].startswith(TRUNK_PREFIXES)]
    mismatched = [p for p in trunk if p not in theirs or theirs[p].shape != mine[p].shape]
    if mismatched:
        raise ValueError(f"init_from {path}: its network's trunk differs from this run's; first differing layer "
                         f"{mismatched[0]}")
    copied = tuple(p for p in mine if p in theirs and theirs[p].shape == mine[p].shape)
    return copied, tuple(p for p in mine if p not in copied)


def warm_start(params: Any, source: tuple[Config, Any], path: str) -> tuple[Any, WarmStart]:
    """`params` with every array of the source model's parameters whose path and shape match copied in (its dtype
    kept); raises ValueError when the trunks differ."""
    theirs = _paths(source[1])
    copied, fresh = layers_to_copy(params, source[1], path)
    leaves, treedef = jax.tree_util.tree_flatten(params)
    new = [jnp.asarray(theirs[p], leaf.dtype) if p in copied else leaf
           for p, leaf in zip(_paths(params), leaves, strict=True)]
    return jax.tree_util.tree_unflatten(treedef, new), WarmStart(source=path, copied=copied, fresh=fresh)
