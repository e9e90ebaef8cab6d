"""The composition root: the one place below the command line that turns a `Config` into the pieces of a run.

    built = build_loop(config)                      # all of it for the loop, once: game, network, seams
    trainer = Trainer(built)                        # (azjax.train.loop; Trainer(config) builds it itself)
    game = config_game(config)                      # the config's game (chess: with its start position)
    net = make_network(config, game)                # the flax module (tanh or SAI heads)
    evaluate = make_evaluator(config, game, net)    # net outputs -> search value (tanh, or SAI's sigmoid-komi)
    config, params = load_model(path)               # a run directory or exported model: the one loader

Everything that reads a method switch of the config to pick a component (`value_head`, `sensible_lambda`,
the search kind) does it here, so the network module knows nothing of the config and the method modules
(SAI, contempt) know nothing of each other.

Games are built once per (name, komi, start): a `Game` holds its pgx environment, which compares by
identity, so sharing one object per setting keeps every jit cache keyed on the game warm.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from azjax.checkpoint import load_config, load_params
from azjax.config import Config
from azjax.games import Game, GameState, make_game, play_max_moves
from azjax.methods import katago_aux, sai
from azjax.methods.alphazero import (
    AuxiliaryTargets,
    FullSearch,
    GameStarts,
    NewGames,
    NoAuxiliaryTargets,
    OutcomeTargets,
    Seams,
    SearchPolicy,
    TanhValue,
    Targets,
    ValueHead,
)
from azjax.methods.go_exploit import ArchiveStarts
from azjax.methods.material_prior import MaterialPriorValue
from azjax.methods.moves_left import MovesLeftTargets, MovesLeftValue
from azjax.methods.odds_starts import OddsStarts
from azjax.methods.playout_cap import PlayoutCapSearch
from azjax.methods.random_openings import RandomOpenings
from azjax.methods.score_utility import ScoreUtilityValue
from azjax.methods.tdleaf import TDLeafTargets
from azjax.methods.wdl import WinDrawLossValue
from azjax.network import PolicyValueNet, with_auxiliary, with_moves_left
from azjax.search import Evaluator, ParentAwareEvaluator, SearchSpec

# ---------------------------------------------------------------- games


class Adjudication(NamedTuple):
    """Self-play's material adjudication (`Config.adjudicate_*`); `plies` 0 is none, whatever the rest says."""

    plies: int = 0
    margin: float = 3.0
    result: str = "margin"
    scale: float = 1.0


@functools.cache
def _game(name: str, komi: float | None, start: str | None, adjudication: Adjudication,
          max_moves: int | None) -> Game:
    return make_game(name, komi=komi, start=start, adjudicate_plies=adjudication.plies,
                     adjudicate_margin=adjudication.margin, adjudicate_result=adjudication.result,
                     adjudicate_scale=adjudication.scale, max_moves=max_moves)


def game_named(name: str, komi: float | None = None, start: str | None = None, adjudicate_plies: int = 0,
               adjudicate_margin: float = 3.0, adjudicate_result: str = "margin", adjudicate_scale: float = 1.0, *,
               selfplay: bool = False) -> Game:
    """`make_game(name, ...)`, one object per setting (engines and arenas share compiled code). Go is played to its
    end (the cap `play_max_moves(name)`, far above any real game), or with self-play's cap (`selfplay`)."""
    if start in ("", "standard"):
        start = None  # the same game as no start at all: one object for both spellings
    # Without adjudication the other fields change nothing: one cached object for all of them.
    adjudication = (Adjudication(adjudicate_plies, float(adjudicate_margin), adjudicate_result, float(adjudicate_scale))
                    if adjudicate_plies else Adjudication())
    return _game(name, komi, start, adjudication, None if selfplay else play_max_moves(name))


def play_game(config: Config) -> Game:
    """The config's game under its own rules: its komi (Go) and its start position (chess)."""
    return game_named(config.game, config.komi, config.start if config.game == "chess" else None)


def config_game(config: Config) -> Game:
    """The game a config trains on: `play_game`'s, with self-play adjudication where the config asks for it, and
    Go's self-play move cap (pgx's size² x 2, `azjax.games.GO_SELFPLAY_MOVES_PER_POINT`)."""
    start = config.start if config.game == "chess" else None
    return game_named(config.game, config.komi, start, config.adjudicate_plies, config.adjudicate_margin,
                      config.adjudicate_result, config.adjudicate_scale, selfplay=True)


def board_game(config: Config) -> Game:
    """The config's game from its standard start (engines, arenas and loaders set positions themselves)."""
    return game_named(config.game, config.komi)


# ---------------------------------------------------------------- network and value read-out


def has_auxiliary_targets(config: Config) -> bool:
    """KataGo's ownership and score targets are on (either loss weight > 0): the network has their heads."""
    return config.ownership_loss_weight > 0 or config.score_loss_weight > 0


def make_network(config: Config, game: Game) -> PolicyValueNet:
    """The config's network for `game`: blocks, channels, compute dtype, value head (tanh, SAI or win/draw/loss),
    policy head (dense, or convolutional over the game's move layout) and KataGo's auxiliary heads
    (`has_auxiliary_targets`)."""
    dtype = jnp.bfloat16 if config.compute_dtype == "bfloat16" else jnp.float32
    h, w = game.observation_shape[:2]
    return PolicyValueNet(
        num_actions=game.num_actions,
        num_blocks=config.num_blocks,
        num_channels=config.num_channels,
        dtype=dtype,
        value_head=config.value_head,
        beta_scale=sai.beta_scale(h * w) if config.value_head == "sai" else 1.0,
        legacy_heads=config.legacy_heads,
        head_hidden_norm=config.head_hidden_norm,
        colour_plane=config.colour_plane,
        liberty_planes=config.liberty_planes,
        aux_heads=has_auxiliary_targets(config),
        global_pooling=config.global_pooling,
        moves_left_head=config.moves_left_loss_weight > 0,
        **_policy_layout(config, game),
    )


def _policy_layout(config: Config, game: Game) -> dict[str, Any]:
    """The network's move layout fields for `policy_head="conv"` (none for the dense head)."""
    if config.policy_head != "conv":
        return {}
    layout = game.policy_layout()
    if layout is None:
        raise ValueError(f"policy_head='conv' needs moves that start from a square (chess), not {game.name}")
    planes, index = layout
    return {"policy_planes": planes, "policy_index": tuple(int(i) for i in index)}


def init_params(net: PolicyValueNet, game: Game, key: jax.Array) -> Any:
    """Fresh parameters of `net` for `game`'s observations (a dummy batch of one)."""
    dummy = jnp.zeros((1, *game.observation_shape), jnp.float32)
    return net.init(key, dummy)


# ---------------------------------------------------------------- the seams (azjax.methods.alphazero)


def value_head(config: Config, like: Config | None = None) -> ValueHead:
    """How network outputs become a value. AlphaZero: tanh. SAI (`value_head="sai"`): the winrate 2 rho(0) - 1
    of the player to move, or with `sensible_lambda` > 0 the sensible agent. Leela Chess Zero (`value_head="wdl"`):
    P(win) - P(loss) of a win/draw/loss head. With Lc0's moves-left head (`moves_left_loss_weight` > 0) the
    search's values of tanh or win/draw/loss are adjusted for the plies each line is expected to last. With
    KataGo's score utility (`score_utility_factor` > 0) the search's values add a bonus for the predicted score lead.
    With KnightCap's material start (`material_prior_weight` > 0; chess) they are blended with the material count.

    `like` (here and in the seam builders below): the config whose switches pick the components, `config`
    the one whose values fill them; they differ in a sweep, where values ride a traced run axis."""
    like = like or config
    value: ValueHead
    if like.value_head == "sai":
        value = sai.SigmoidKomiValue(sensible_lambda=config.sensible_lambda, sensible=like.sensible_lambda > 0)
    else:
        value = WinDrawLossValue() if like.value_head == "wdl" else TanhValue()
    if like.moves_left_loss_weight > 0:
        value = MovesLeftValue(inner=value, moves_left_apply=with_moves_left, slope=config.moves_left_slope,
                               max_effect=config.moves_left_max_effect)
    if like.score_utility_factor > 0:
        value = ScoreUtilityValue(inner=value, score_apply=with_auxiliary("score"),
                                  factor=config.score_utility_factor, scale=config.score_utility_scale)
    if like.material_prior_weight > 0:
        value = MaterialPriorValue(inner=value, weight=config.material_prior_weight, scale=config.material_prior_scale)
    return value


def game_starts(config: Config, game: Game, net: PolicyValueNet, like: Config | None = None) -> GameStarts:
    """Where a restarting slot's game comes from. AlphaZero: `game.init`. SAI: komi from the empty board's
    sigmoid, and branch starts from finished games. Go-Exploit (`start_state_prob` < 1): an archive of
    visited or searched states. Odds starts (`odds_start_prob` > 0, chess): a share of games begin a piece
    short, as KataGo's handicap games. Random openings (`random_opening_plies` > 0) follow each of these starts with
    a few random moves."""
    like = like or config
    starts = _starts(config, game, net, like)
    if like.odds_start_prob > 0:
        starts = OddsStarts(inner=starts, game=game, odds_start_prob=config.odds_start_prob)
    if like.random_opening_plies > 0:
        return RandomOpenings(inner=starts, game=game, max_plies=like.random_opening_plies)
    return starts


def _starts(config: Config, game: Game, net: PolicyValueNet, like: Config) -> GameStarts:
    if like.start_state_prob < 1:
        return ArchiveStarts(game=game, start_state_prob=config.start_state_prob, kind=config.archive_kind,
                             population=config.archive, learning_steps=config.sgd_steps_per_step)
    if like.value_head == "sai":
        size = game.observation_shape[0]
        return sai.KomiStarts(game=game, heads=sai.network_heads(net.apply),
                              official_share=config.sai_official_komi_share, branch_prob=config.branch_prob,
                              max_branches=config.max_branches, max_komi=size**2 + 0.5,
                              branching=like.branch_prob > 0 and like.max_branches > 0)
    return NewGames(game)


def start_pool_size(config: Config) -> int:
    """States the game starts' pool holds over all devices: Go-Exploit's archive, else SAI's start queue."""
    return config.archive_size if config.start_state_prob < 1 else config.start_queue_size


def targets(config: Config, like: Config | None = None, game: Game | None = None) -> Targets:
    """What the replay records and the value target: z, or (1 - w) z + w q with `value_target_q_weight` w and
    q of kind `value_target_q`; TDLeaf(lambda) (`td_lambda` < 1 or `td_zero_unpredicted`) puts the
    lambda-return in z's place."""
    like = like or config
    mixes_q = like.value_target_q_weight > 0
    if like.td_lambda < 1 or like.td_zero_unpredicted:
        return TDLeafTargets(lam=config.td_lambda, zero_unpredicted=like.td_zero_unpredicted,
                             q_weight=config.value_target_q_weight, mixes_q=mixes_q, q=like.value_target_q,
                             game=game)
    return OutcomeTargets(q_weight=config.value_target_q_weight, mixes_q=mixes_q, q=like.value_target_q)


def auxiliary_targets(config: Config, game: Game, like: Config | None = None) -> AuxiliaryTargets:
    """What else finished games teach: nothing (AlphaZero), KataGo's final ownership and score margin
    (`ownership_loss_weight` or `score_loss_weight` > 0; Go), or Lc0's plies left (`moves_left_loss_weight` > 0)."""
    like = like or config
    if like.moves_left_loss_weight > 0:
        return MovesLeftTargets(weight=config.moves_left_loss_weight)
    if has_auxiliary_targets(like):
        return katago_aux.OwnershipScoreTargets(size=game.observation_shape[0],
                                                ownership_weight=config.ownership_loss_weight,
                                                score_weight=config.score_loss_weight)
    return NoAuxiliaryTargets()


def loop_seams(config: Config, game: Game, net: PolicyValueNet, like: Config | None = None) -> Seams:
    """The loop's five seams for a config: AlphaZero's unless it switches a method on (`like`: see `value_head`).
    With auxiliary targets the value head's columns (metrics.csv, the dead-head watch) gain theirs."""
    value = value_head(config, like)
    auxiliary = auxiliary_targets(config, game, like)
    logged = katago_aux.AuxiliaryValue(value, auxiliary.columns) if auxiliary.columns else value
    return Seams(search=search_policy(config, game, value.evaluator(net.apply), like), value=logged,
                 starts=game_starts(config, game, net, like), targets=targets(config, like, game),
                 auxiliary=auxiliary)


@dataclasses.dataclass(frozen=True)
class Built:
    """What a config builds for the loop, made once (`build_loop`): the game, the network and the loop's five seams
    (the search policy holds the search spec and the evaluator it searches with).

    Attributes:
      config: the config whose values fill the components.
      like: the config whose switches chose them; `config` itself, except in a sweep (`with_values`).
      game, net: the config's game and network.
      seams: the loop's seams (AlphaZero's unless the config switches a method on); a test or a new method may
        replace one (`dataclasses.replace(built, seams=dataclasses.replace(built.seams, targets=...))`).
    """

    config: Config
    like: Config
    game: Game
    net: PolicyValueNet
    seams: Seams

    @property
    def spec(self) -> SearchSpec:
        """The self-play search settings."""
        return self.seams.search.spec

    @property
    def evaluate(self) -> Evaluator | ParentAwareEvaluator:
        """The network's outputs as the search's values, through the value seam."""
        return self.seams.value.evaluator(self.net.apply)

    def with_values(self, config: Config) -> Built:
        """The same game, network and components, filled with `config`'s values (traced ones too: a sweep's run
        axis); every size and shape stays this one's."""
        return dataclasses.replace(self, config=config, seams=loop_seams(config, self.game, self.net, like=self.like))


def build_loop(config: Config) -> Built:
    """The game, the network and the loop's seams of `config`, built once."""
    game = config_game(config)
    net = make_network(config, game)
    return Built(config=config, like=config, game=game, net=net, seams=loop_seams(config, game, net))


def search_policy(config: Config, game: Game, evaluate: Evaluator | ParentAwareEvaluator,
                  like: Config | None = None) -> SearchPolicy:
    """How self-play searches: the config's search on every move, or KataGo's playout caps
    (`full_search_prob` < 1: full searches with that probability, fast ones otherwise; `forced_playouts_k`
    > 0: forced playouts and policy-target pruning in the full searches)."""
    like = like or config
    spec = search_spec(config, training=True)
    if like.full_search_prob < 1 or like.forced_playouts_k > 0:
        return PlayoutCapSearch(spec=spec, game=game, evaluate=evaluate, full_prob=config.full_search_prob,
                                fast_simulations=config.fast_simulations, forced_k=config.forced_playouts_k)
    return FullSearch(spec=spec, game=game, evaluate=evaluate)


def search_spec(config: Config, *, training: bool, num_simulations: int | None = None) -> SearchSpec:
    """The search policy: self-play settings (`training=True`: root noise) or evaluation settings (no noise,
    the config's `eval_search` kind unless it is "same", and its `eval_` Gumbel root settings where set);
    search-contempt's `n_scl` in both."""
    kind = config.search if training or config.eval_search == "same" else config.eval_search
    considered, c_scale = config.max_num_considered_actions, config.gumbel_c_scale
    if not training:
        considered = config.eval_max_num_considered_actions or considered
        c_scale = config.eval_gumbel_c_scale or c_scale
    return SearchSpec(
        kind=kind,
        num_simulations=num_simulations or config.num_simulations,
        max_num_considered_actions=considered,
        gumbel_scale=config.gumbel_scale if training else 0.0,
        gumbel_c_visit=config.gumbel_c_visit,
        gumbel_c_scale=c_scale,
        pb_c_init=config.pb_c_init,
        dirichlet_alpha=config.dirichlet_alpha,
        dirichlet_fraction=config.dirichlet_fraction if training else 0.0,
        n_scl=config.n_scl,
        twofold_draws=config.twofold_draws,
        certainty=config.certainty_propagation if training or config.eval_certainty_propagation == "same"
        else config.eval_certainty_propagation,
    )


def make_evaluator(config: Config, game: Game, net: PolicyValueNet | None = None) -> Evaluator | ParentAwareEvaluator:
    """The player's evaluator of the config's network (engines, arenas, evaluation; self-play's comes with the loop's
    seams): (params, states [B]) -> (logits [B, A], value [B]), the value through the config's value head
    (`value_head`) at the player's settings (`player_config`)."""
    net = net or make_network(config, game)
    return value_head(player_config(config)).evaluator(net.apply)


def player_config(config: Config) -> Config:
    """The config whose value head a player reads: SAI's sensible agent at `eval_sensible_lambda` where that is set,
    so that a model's config carries the settings its tables were played with apart from those it trained with."""
    if config.eval_sensible_lambda is None:
        return config
    return config.replace(sensible_lambda=config.eval_sensible_lambda)


@functools.cache
def cached_evaluator(config: Config, game: Game) -> Evaluator | ParentAwareEvaluator:
    """`make_evaluator(config, game)`, one function per (config, game), so jitted searches keyed on it are reused."""
    return make_evaluator(config, game)


@functools.cache
def jitted_sai_heads(config: Config, game: Game) -> sai.Heads:
    """The jitted heads (logits, alpha, beta) of a SAI config's network (for read-outs on the host)."""
    if config.value_head != "sai":
        raise ValueError(f"score read-outs need a SAI network (value_head='sai'), not value_head={config.value_head!r}")
    return jax.jit(sai.network_heads(make_network(config, game).apply))


def sai_readout(config: Config, game: Game, params: Any, state: GameState) -> sai.Readout:
    """The sigmoid of `config`'s SAI network (parameters `params`) at one unbatched Go position."""
    return sai.readout(jitted_sai_heads(config, game), params, state)


# ---------------------------------------------------------------- the one model loader


def param_template(config: Config, game: Game) -> Any:
    """Zero parameters of the config's network, shaped by `jax.eval_shape` (no eager init: seconds on a CPU)."""
    net = make_network(config, game)
    dummy = jax.ShapeDtypeStruct((1, *game.observation_shape), jnp.float32)
    shapes = jax.eval_shape(net.init, jax.ShapeDtypeStruct((), jax.random.key(0).dtype), dummy)
    return jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), shapes)


def load_model(path: str | os.PathLike) -> tuple[Config, Any]:
    """(config, params) of a run directory or an exported model, the parameters checked against the
    config's network."""
    config = load_config(path)
    template = param_template(config, board_game(config))
    return config, jax.tree.map(jnp.asarray, load_params(path, template))


load_checkpoint = load_model  # the name scripts and notebooks have used
