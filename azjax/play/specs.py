"""Agent specs: the one parser of the players that `azjax eval`, `azjax arena` and the scripts name.

    agent, game = parse_agent("results/models/c4:64:n_scl=5", None, simulations=64)
    game = spec_game("policy:results/models/c4")      # the game a spec fixes, or None

Specs:
  * `PATH[:N][:key=value,...]`: a run directory or exported model searching N simulations
    (default `simulations`); keys `n_scl` (0 = off), `search` (puct / gumbel), `considered` (the Gumbel
    root's moves, `eval_max_num_considered_actions`), `c_scale` (`eval_gumbel_c_scale`), `twofold_draws` (1 / 0,
    chess: Lc0's two-fold draws in the search), `sensible_lambda` (SAI networks: the sensible agent's lambda in
    [0, 1], 0 the plain winrate), `score_utility` (Go networks with a score head: KataGo's score utility's factor in
    [0, 1], `score_utility_factor`), `material_prior` (chess: KnightCap's material start's weight in [0, 1],
    `material_prior_weight`) and `certainty` (off / visited / expanded: Lc0's certainty propagation,
    `eval_certainty_propagation`);
  * `policy:PATH`: the raw policy; `random`; `mcts:N` (rollout MCTS); `material` (chess: one ply of
    material, the move that captures the most);
  * `gtp:COMMAND ...`: a GTP program; `uci:COMMAND[:key=value,...]`: a UCI chess program, keys `skill`
    (Stockfish's Skill Level), `movetime` (ms, default 100), `nodes`, `depth`, others sent as `setoption`s;
  * `NAME=SPEC` names an agent explicitly (default: a short name derived from the spec).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from azjax.build import board_game, game_named, load_model, make_evaluator
from azjax.checkpoint import load_config
from azjax.engines.external import resolve_command
from azjax.play import agents
from azjax.play.agents import Agent


@dataclasses.dataclass
class ArenaAgent:
    """A player: a JAX agent (batched, jittable) or an external program (played on the host)."""

    name: str
    spec: str
    kind: str  # "jax", "gtp" or "uci"
    agent: Agent | None = None
    argv: list[str] = dataclasses.field(default_factory=list)
    options: dict[str, Any] = dataclasses.field(default_factory=dict)  # uci: setoption values
    go: dict[str, int] = dataclasses.field(default_factory=dict)  # uci: movetime / nodes / depth
    checkpoint: str | None = None  # checkpoint agents: host games use an azjax.engines.engine.Engine
    visits: int = 0
    n_scl: int | None = None
    search: str | None = None
    # checkpoint agents: the config fields the spec's options change (`considered`, `c_scale`, `twofold_draws`,
    # `sensible_lambda`, `score_utility`, `material_prior`, `certainty`)
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def external(self) -> bool:
        return self.kind != "jax"


def split_options(text: str) -> dict[str, str]:
    """`key=value,key=value` -> {key: value}; raises ValueError on an item without `=`."""
    out = {}
    for item in text.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"bad option {item!r}: expected key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _strip_name(spec: str) -> tuple[str | None, str]:
    """(explicit name or None, the spec without `NAME=`)."""
    head = spec.split(":", 1)[0]
    if "=" in head and not head.startswith(("gtp", "uci")):
        name, spec = spec.split("=", 1)
        return name, spec
    return None, spec


def _has_options(spec: str) -> bool:
    """The spec ends in `:key=value,...` (and is not itself an existing path)."""
    return ":" in spec and "=" in spec.rsplit(":", 1)[1] and not Path(spec).exists()


def _checkpoint_path(base: str) -> tuple[str, bool, str | None]:
    """(path, raw policy?, the `:N` suffix or None) of a checkpoint spec without options."""
    policy = base.startswith("policy:")
    path = base[len("policy:") :] if policy else base
    n = None
    if not policy and ":" in path and not Path(path).exists():
        path, n = path.rsplit(":", 1)
    return path, policy, n


def spec_game(spec: str) -> str | None:
    """The game a spec fixes: a checkpoint's game, chess for UCI engines, else None."""
    _, spec = _strip_name(spec)
    if spec.startswith("gtp:"):
        return None
    if spec.startswith("uci:"):
        return "chess"
    if _has_options(spec):
        spec = spec.rsplit(":", 1)[0]
    path, _, _ = _checkpoint_path(spec)
    return load_config(path).game if Path(path).is_dir() else None


def parse_agent(spec: str, game_name: str | None, simulations: int | None, *, search: str | None = None,
                n_scl: int | None = None) -> tuple[ArenaAgent, str | None]:
    """A player from its spec (see the module docstring); returns it and the game it fixes.

    `search` and `n_scl` are defaults for checkpoint agents (command-line flags); the spec's own
    `:search=...` / `:n_scl=...` options win. `simulations`: the search budget of a checkpoint agent without `:N`
    (None: its config's `eval_simulations`, what the model plays with in an engine).
    """
    name, spec = _strip_name(spec)
    if spec.startswith("gtp:"):
        argv = resolve_command(spec[4:])
        short = " ".join([Path(argv[0]).name] + argv[1:])
        return ArenaAgent(name=name or short, spec=spec, kind="gtp", argv=argv), None
    if spec.startswith("uci:"):
        return _uci_agent(name, spec), "chess"
    # JAX agents: checkpoints with optional `:N` and `:key=value,...` suffixes
    spec_n_scl = spec_search = None
    spec_overrides: dict[str, Any] = {}  # config fields, for this player only
    base = spec
    if _has_options(base):
        base, tail = base.rsplit(":", 1)
        for k, v in split_options(tail).items():
            if k == "n_scl":
                if not v.isdigit():
                    raise ValueError(f"n_scl needs an integer >= 0, got {v!r}")
                spec_n_scl = int(v)
            elif k == "search":
                spec_search = v
            elif k == "considered":
                if not v.isdigit() or int(v) < 1:
                    raise ValueError(f"considered needs an integer >= 1, got {v!r}")
                spec_overrides["eval_max_num_considered_actions"] = int(v)
            elif k == "c_scale":
                spec_overrides["eval_gumbel_c_scale"] = _positive_float(v, "c_scale")
            elif k == "twofold_draws":
                if v not in ("0", "1"):
                    raise ValueError(f"twofold_draws needs 1 (on) or 0 (off), got {v!r}")
                spec_overrides["twofold_draws"] = v == "1"
            elif k == "sensible_lambda":
                spec_overrides["eval_sensible_lambda"] = _unit_float(v, "sensible_lambda")
            elif k == "score_utility":
                spec_overrides["score_utility_factor"] = _unit_float(v, "score_utility")
            elif k == "material_prior":
                spec_overrides["material_prior_weight"] = _unit_float(v, "material_prior")
            elif k == "certainty":
                if v not in ("off", "visited", "expanded"):
                    raise ValueError(f"certainty needs off, visited or expanded, got {v!r}")
                spec_overrides["eval_certainty_propagation"] = v
            else:
                raise ValueError(f"unknown checkpoint option {k!r} in {spec!r} "
                                 "(n_scl, search, considered, c_scale, twofold_draws, sensible_lambda, score_utility, "
                                 "material_prior, certainty)")
    if base == "material":
        if game_name not in (None, "chess"):
            raise ValueError(f"agent 'material' plays chess, not {game_name}")
        agent = agents.material_agent(game_named("chess"))
        return ArenaAgent(name=name or "material", spec=spec, kind="jax", agent=agent), "chess"
    if base == "random" or base.startswith("mcts:"):
        if game_name is None:
            raise ValueError(f"agent {spec!r} needs --game (or a checkpoint among the agents)")
        n = base.split(":", 1)[1] if base != "random" else "1"
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"bad agent {spec!r}: mcts:N needs a positive number of simulations")
        game = game_named(game_name)  # one game object: compiled arenas are reused across pairings
        if base == "random":
            return ArenaAgent(name=name or "random", spec=spec, kind="jax", agent=agents.random_agent(game)), game_name
        agent = agents.rollout_mcts_agent(game, int(n))
        return ArenaAgent(name=name or agent.name, spec=spec, kind="jax", agent=agent), game_name
    path, policy, n = _checkpoint_path(base)
    visits = simulations
    if n is not None:
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"bad agent {spec!r}: PATH:N needs a positive number of simulations")
        visits = int(n)
    if not Path(path).is_dir():
        raise ValueError(f"unknown agent {spec!r}: not random, mcts:N, gtp:..., uci:... or a checkpoint directory")
    config, params = load_model(path)
    if game_name is not None and config.game != game_name:
        raise ValueError(f"{path} plays {config.game}, not {game_name}")
    visits = visits or config.eval_simulations
    search = spec_search or search
    n_scl = spec_n_scl if spec_n_scl is not None else n_scl
    if search:
        config = config.replace(eval_search=search)
    if n_scl is not None:  # an override of the checkpoint's n_scl (0: off)
        config = config.replace(n_scl=n_scl)
    config = config.replace(**spec_overrides)
    game = board_game(config)
    label = Path(path).name
    if policy:
        agent = agents.policy_agent(game, make_evaluator(config, game), params=params)
        return ArenaAgent(name=name or f"{label}:policy", spec=spec, kind="jax",
                          agent=dataclasses.replace(agent, name=f"{label}:policy")), config.game
    agent = agents.network_agent(config, game, params, num_simulations=visits)
    label += (f":{visits}" + (f":n_scl={spec_n_scl}" if spec_n_scl else "") + (f":{spec_search}" if spec_search else "")
              + "".join(f":{k}={int(v) if isinstance(v, bool) else v}" for k, v in _spec_options(spec_overrides)))
    player = ArenaAgent(name=name or label, spec=spec, kind="jax", agent=dataclasses.replace(agent, name=label),
                        checkpoint=path, visits=visits, n_scl=n_scl, search=search, overrides=spec_overrides)
    return player, config.game


def _unit_float(text: str, key: str) -> float:
    """A spec option's value in [0, 1]; ValueError naming the key otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{key} needs a number in [0, 1], got {text!r}")
    return value


def _positive_float(text: str, key: str) -> float:
    """A spec option's value > 0; ValueError naming the key otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0.0:
        raise ValueError(f"{key} needs a number > 0, got {text!r}")
    return value


def _spec_options(overrides: dict[str, Any]) -> list[tuple[str, Any]]:
    """The spec's own option names for config overrides, as a label shows them."""
    names = {"eval_max_num_considered_actions": "considered", "eval_gumbel_c_scale": "c_scale",
             "eval_certainty_propagation": "certainty", "score_utility_factor": "score_utility",
             "material_prior_weight": "material_prior",
             "eval_sensible_lambda": "sensible_lambda"}
    return [(names.get(k, k), v) for k, v in overrides.items()]


def require_jax_agent(spec: str, game_name: str, simulations: int) -> ArenaAgent:
    """`parse_agent` for the scripts that play batched JAX agents of one game: exits naming the spec when it is
    an external program or fixes another game."""
    player, fixed = parse_agent(spec, game_name, simulations)
    if player.external or fixed != game_name:
        raise SystemExit(f"{spec!r} is not a {game_name.replace('_', ' ').title()} agent of azjax")
    return player


def _uci_agent(name: str | None, spec: str) -> ArenaAgent:
    body = spec[4:]
    opts: dict[str, str] = {}
    if ":" in body and "=" in body.rsplit(":", 1)[1]:
        body, tail = body.rsplit(":", 1)
        opts = split_options(tail)
    argv = resolve_command(body)
    go: dict[str, int] = {}
    options: dict[str, Any] = {}
    for k, v in opts.items():
        if k in ("movetime", "nodes", "depth"):
            if not v.isdigit():
                raise ValueError(f"uci option {k} needs a positive integer, got {v!r}")
            go[k] = int(v)
        elif k == "skill":
            options["Skill Level"] = v
        else:
            options[k] = v
    if not go:
        go["movetime"] = 100
    short = Path(argv[0]).name + "".join(f":{k}={v}" for k, v in opts.items())
    return ArenaAgent(name=name or short, spec=spec, kind="uci", argv=argv, options=options, go=go)
