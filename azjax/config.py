"""One typed, frozen config per run, with presets per game.

Every field can be set from the command line (`--num_simulations 64`: `config_flags`, read back by
`config_overrides`); a run directory keeps the config as JSON, and resuming checks that the saved config matches.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin, get_type_hints

from azjax.games import ADJUDICATE_RESULTS, GAMES, MAX_CHESS_PLIES, ODDS_FENS, check_fen


@dataclasses.dataclass(frozen=True)
class Config:
    # game
    game: str = "connect_four"
    komi: float | None = None  # Go only; None = the game's official komi
    start: str = "standard"  # chess only: standard, queen_odds, rook_odds, knight_odds or a FEN
    # Chess only: a training game still running after `adjudicate_plies` plies ends there, won by the side
    # `adjudicate_margin` pawns or more ahead in material, else drawn. 0 = off (AlphaZero: chess's own rules).
    # `adjudicate_result` "proportional" scores the lead in units of the margin instead, clipped to [-1, 1]
    # (azjax.games.material_result). Engines and arenas always play chess's own rules.
    adjudicate_plies: int = 0
    adjudicate_margin: float = 3.0
    adjudicate_result: Literal["margin", "proportional"] = "margin"
    # The adjudicated result times `adjudicate_scale` (1 = off): below 1 a material lead is worth less than the
    # mate it should become, so the value and the search have a reason to convert it.
    adjudicate_scale: float = 1.0
    # network
    num_blocks: int = 3
    num_channels: int = 32
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    # The heads of models saved before normalised heads existed (one-filter value conv, ReLU, no
    # normalisation): only for loading and resuming them. A config.json without this field is such a model.
    legacy_heads: bool = False
    # LayerNorm before the ReLU of the value (alpha, beta) heads' hidden layer, so no position switches every
    # hidden unit off. A config.json without this field is a model saved before it existed (False).
    head_hidden_norm: bool = True
    # AlphaZero's colour plane: the network's input gains a plane that is 1 where the player to move moved
    # first. pgx's Connect Four observation (own stones, opponent's stones) leaves it to be counted, yet its
    # threats are good or bad by row parity for the first and the second player. Connect Four only (there the
    # stone counts tell the colour); Go's and chess's observations carry a colour plane of their own.
    colour_plane: bool = False
    # KataGo's liberty features (Go only; docs/methods.md section 17): the network's input gains three planes, 1 on
    # the stones of chains with exactly 1, 2 and 3 liberties (`azjax.network.liberty_planes`), so a group in atari
    # is seen, not counted. False = off (AlphaZero: pgx's observation alone).
    liberty_planes: bool = False
    # KataGo's global pooling (Go only; docs/methods.md section 9): some residual blocks add a bias computed from
    # the board's mean and max to every point, and the heads read pooled features instead of the flattened
    # board, so one network's weights play every board size. False = AlphaZero's network.
    global_pooling: bool = False
    # The policy head. "dense" (AlphaGo Zero's: a 1x1 conv to 2 filters a point, then a dense layer to every move);
    # "conv" (AlphaZero's chess head, chess only): a 3x3 conv, then 73 move planes at every square, each move read at
    # its own from-square and plane (`Game.policy_layout`; docs/experiments.md, "chess's policy head").
    policy_head: Literal["dense", "conv"] = "dense"
    # search
    search: Literal["gumbel", "puct"] = "gumbel"
    # The search of the trained network as a player (periodic evaluation, eval, arena, play, engines);
    # "same" = the self-play search. Gumbel's root is built for learning from few simulations; a player
    # with a larger budget may do better with PUCT (results/connect_four/connect_four_quick).
    eval_search: Literal["same", "gumbel", "puct"] = "same"
    num_simulations: int = 32
    max_num_considered_actions: int = 16  # Gumbel root
    gumbel_scale: float = 1.0
    # Gumbel MuZero's sigma(q) = (c_visit + max_b N(b)) c_scale q, q the completed Q-values rescaled to [0, 1]: how
    # far the improved policy (the policy target, the move chooser) leans from the prior towards the search's
    # values. mctx's defaults (50, 0.1). A smaller c_scale trusts a young value head less.
    gumbel_c_visit: float = 50.0
    gumbel_c_scale: float = 0.1
    # The Gumbel root of the trained network as a player, where it differs from self-play's; 0 = self-play's.
    # A player that considers every legal move and weighs searched values at c_scale 1 plays the mates in one its
    # search finds, which the prior outweighs at 0.1 (lab/chess_probes/mate_probe.py; docs/experiments.md, chess).
    eval_max_num_considered_actions: int = 0
    eval_gumbel_c_scale: float = 0.0
    pb_c_init: float = 1.25  # PUCT
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    n_scl: int = 0  # search-contempt node limit (docs/methods.md section 1); 0 = off (plain search)
    # Leela Chess Zero's two-fold draws (chess; docs/methods.md section 11): inside the search tree a position that
    # occurred before is a draw, so a side ahead steers clear of repeating. The games themselves keep chess's rules.
    twofold_draws: bool = False
    # Lc0's certainty propagation (docs/methods.md section 14): proven wins, losses and draws backed up the tree; the
    # root plays a proven win and no proven loss while it has another move. "visited": a finished game is known
    # where the search reaches it; "expanded": also each move that ends the game, when the node it leaves is
    # expanded (a game step per legal move per node). The player's own setting; "same" = self-play's.
    certainty_propagation: Literal["off", "visited", "expanded"] = "off"
    eval_certainty_propagation: Literal["same", "off", "visited", "expanded"] = "same"
    temperature_moves: int = 10  # tau = 1 for the first k moves of each trajectory, then greedy
    # value_head="tanh" = plain AlphaZero; "sai": SAI sigmoid-komi values (docs/methods.md section 2; Go only);
    # "wdl": Leela Chess Zero's win/draw/loss head (section 10): a draw is a class of its own, value P(win) - P(loss)
    value_head: Literal["tanh", "sai", "wdl"] = "tanh"
    sai_official_komi_share: float = 0.0  # share of new games at the official komi (the rest: sigmoid draws)
    branch_prob: float = 0.025  # C_branch: each position of a finished game starts a branch with this probability
    max_branches: int = 3  # branches per game at most
    sensible_lambda: float = 0.0  # the sensible agent's lambda in [0, 1] (0 = plain winrate)
    eval_sensible_lambda: float | None = None  # the player's (engines, arenas, evaluation); None = sensible_lambda
    start_queue_size: int = 1024  # start states (SAI branch points) waiting for a free game slot (all devices)
    # Go-Exploit start-state archives (docs/methods.md section 3): a trajectory starts at the initial state with
    # probability start_state_prob (lambda; 1 = always = AlphaZero), else at a state drawn from an archive of
    # `archive` states (visited: positions played in self-play; search: nodes expanded by full searches).
    start_state_prob: float = 1.0
    archive: Literal["visited", "search"] = "visited"
    archive_kind: Literal["circular", "reservoir", "expanding"] = "circular"
    archive_size: int = 16384  # states (all devices)
    # Random openings (azjax.methods.random_openings): each trajectory begins after k uniformly random legal
    # moves from its start, k uniform in 0..random_opening_plies, which are not trained on; 0 = off (AlphaZero).
    random_opening_plies: int = 0
    # Odds starts (docs/methods.md section 13; chess): a game starts with one side a queen, rook, bishop or
    # knight short with this probability, as KataGo plays a share of handicap games; 0 = off (AlphaZero).
    odds_start_prob: float = 0.0
    # TDLeaf(lambda) value targets (docs/methods.md section 4): 1 = the outcome z (AlphaZero).
    td_lambda: float = 1.0
    td_zero_unpredicted: bool = False  # zero positive TDs from opponent moves the PV did not predict
    # KataGo's playout caps (docs/methods.md section 6): a full search with probability full_search_prob (trained
    # on), else a fast one of fast_simulations (played, not trained on); 1 = every move full = AlphaZero.
    full_search_prob: float = 1.0
    fast_simulations: int = 8
    forced_playouts_k: float = 0.0  # forced playouts and policy-target pruning (KataGo: 2; PUCT only); 0 = off
    # KataGo's auxiliary targets (Go only; azjax.methods.katago_aux): extra heads learn each point's final
    # ownership and the final score margin, their losses weighted by these (recommended: 1.5 and 0.1); both
    # 0 = off (AlphaZero: no extra heads). A config.json without them is a model saved before they existed (off).
    ownership_loss_weight: float = 0.0
    score_loss_weight: float = 0.0
    # KataGo's score utility (azjax.methods.score_utility, docs/methods.md section 15): the search adds a bonus for
    # the score lead the score head predicts relative to the root's, so a side far behind or ahead still plays for
    # points: the bonus's weight (KataGo's match play: 0.3) and its scale in units of sqrt(board area) (0.75);
    # needs the score head (score_loss_weight > 0); factor 0 = off (AlphaZero: the value head alone).
    score_utility_factor: float = 0.0
    score_utility_scale: float = 0.75
    # KnightCap's start (azjax.methods.material_prior, docs/methods.md section 16; chess): the search reads
    # (1 - w) v + w tanh(material lead / scale) for the value head's v, so a net that has learnt nothing yet still
    # counts material; in self-play and in play. w = `material_prior_weight` in [0, 1]; 0 = off (AlphaZero).
    material_prior_weight: float = 0.0
    material_prior_scale: float = 4.0  # pawns: a lead this big reads tanh(1) = 0.76
    # Leela Chess Zero's moves-left head (azjax.methods.moves_left): a head learns the plies each position's game
    # went on for, its Huber loss weighted by this (recommended 0.1); 0 = off (AlphaZero: no head). The search
    # then prefers shorter lines when winning and longer ones when losing: lc0's slope (value a ply) and its cap,
    # max_effect (0 = the head trains, the search ignores it).
    moves_left_loss_weight: float = 0.0
    moves_left_slope: float = 0.0027
    moves_left_max_effect: float = 0.0345
    # Warm start (azjax.train.warm_start): a model or run directory whose layers of the same shape this run starts
    # from (the trunk and the heads' convolutions carry over between board sizes); "" = off (fresh weights).
    init_from: str = ""
    # self-play and replay
    num_envs: int = 256  # games in flight (over all devices)
    moves_per_step: int = 8  # self-play moves per loop step
    replay_size: int = 65536
    min_replay_size: int = 4096  # positions with known outcomes before SGD starts
    # training
    batch_size: int = 256
    sgd_steps_per_step: int = 4
    learning_rate: float = 2e-3
    lr_warmup_steps: int = 100
    lr_end_fraction: float = 0.1  # cosine decay to this fraction of the peak over the run
    weight_decay: float = 1e-4
    value_loss_weight: float = 1.0
    # Averaged weights (KataGo's and lc0's SWA, as an exponential moving average): after each loop step
    # average <- swa_decay * average + (1 - swa_decay) * params. Self-play searches with the trained weights;
    # the run gives out the average (exported params, evaluation, value probe, SAI's logged read-out).
    # 0 = off (AlphaZero: the run gives out the trained weights).
    swa_decay: float = 0.0
    # Value target (1 - w) z + w q, q = the search's value of the position (0 = AlphaZero's z).
    # Averaging z and q helped Connect Four in Oracle's "Lessons from AlphaZero" series (2018).
    value_target_q_weight: float = 0.0
    # q: "policy" = the value of the search's policy target, sum_a pi(a) Q(a) over the visited root moves;
    # "root" = the root's mean backed-up value, which under Gumbel averages over the losing moves sequential
    # halving visits too (results/connect_four/connect_four_hour/pons_values.json). A config.json without this field
    # is a run saved before it existed ("root").
    value_target_q: Literal["policy", "root"] = "policy"
    augment: bool = True  # random board symmetries on sampled batches
    # run
    num_steps: int = 1000  # loop steps
    seed: int = 0
    log_every: int = 10
    checkpoint_every: int = 100
    eval_every: int = 250  # 0 = never
    eval_games: int = 64
    eval_simulations: int = 64  # the network agent's search budget in periodic evaluation
    eval_opponent_simulations: int = 200  # rollout MCTS
    # Go-Exploit's value losses on visited and on search states (azjax.play.value_probe), measured at each
    # evaluation step from this many self-play games and written to metrics.csv; 0 = not measured.
    value_probe_games: int = 0

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            _check_type(f.name, value, hints[f.name])
            if isinstance(value, float) and not math.isfinite(value):  # NaN passes every range check below
                raise ValueError(f"{f.name} must be a finite number, got {value!r}")
            if type(value) is int and float in _union_args(hints[f.name]) and int not in _union_args(hints[f.name]):
                object.__setattr__(self, f.name, float(value))  # 1 -> 1.0, so JSON and comparisons agree
        if self.game not in GAMES:
            raise ValueError(f"unknown game {self.game!r}; choose one of {', '.join(GAMES)}")
        positive = ["num_blocks", "num_channels", "num_simulations", "num_envs", "moves_per_step",
                    "replay_size", "batch_size", "num_steps", "log_every", "checkpoint_every",
                    "eval_games", "eval_simulations", "eval_opponent_simulations",
                    "max_num_considered_actions", "start_queue_size", "archive_size", "fast_simulations"]
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        nonneg = ["sgd_steps_per_step", "min_replay_size", "temperature_moves", "lr_warmup_steps",
                  "eval_every", "weight_decay", "learning_rate", "dirichlet_fraction", "gumbel_scale",
                  "gumbel_c_visit", "gumbel_c_scale", "eval_max_num_considered_actions", "eval_gumbel_c_scale",
                  "pb_c_init", "value_loss_weight", "value_probe_games", "random_opening_plies"]
        for name in nonneg:
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.dirichlet_fraction <= 1:
            raise ValueError(f"dirichlet_fraction must be in [0, 1], got {self.dirichlet_fraction}")
        if self.value_probe_games % 2:
            raise ValueError(f"value_probe_games must be even (both colours move first), got {self.value_probe_games}")
        if not 0.0 <= self.value_target_q_weight <= 1.0:
            raise ValueError(f"value_target_q_weight must be in [0, 1], got {self.value_target_q_weight}")
        if self.value_target_q_weight > 0 and self.value_head == "sai":
            raise ValueError("value_target_q_weight does not apply to value_head='sai' (SAI trains on z with kbar)")
        if self.komi is not None:
            if not self.game.startswith("go_"):
                raise ValueError(f"komi applies to Go only, not {self.game!r}")
            if (self.komi * 2) % 2 != 1:
                raise ValueError(f"komi must be a half-integer (e.g. 7.5) so no game is drawn, got {self.komi}")
        if self.start not in ("", "standard") and self.game != "chess":
            raise ValueError(f"start positions apply to chess only, not {self.game!r} (start={self.start!r})")
        if self.game == "chess" and self.start not in ("", *ODDS_FENS):
            try:  # here, not when the game is built: by then the run directory would already exist
                check_fen(self.start)
            except ValueError as e:
                raise ValueError(f"start must be {', '.join(ODDS_FENS)} or a legal FEN: {e}") from None
        if self.adjudicate_plies and self.game != "chess":
            raise ValueError(f"adjudicate_plies (material adjudication) applies to chess only, not {self.game!r}")
        if not 0 <= self.adjudicate_plies < MAX_CHESS_PLIES:
            raise ValueError(f"adjudicate_plies must be in [0, {MAX_CHESS_PLIES}) (0 = off), "
                             f"got {self.adjudicate_plies}")
        if self.adjudicate_margin <= 0:
            raise ValueError(f"adjudicate_margin must be > 0 pawns, got {self.adjudicate_margin}")
        if not 0 < self.adjudicate_scale <= 1:
            raise ValueError(f"adjudicate_scale must be in (0, 1] (1 = off), got {self.adjudicate_scale}")
        if self.adjudicate_result not in ADJUDICATE_RESULTS:
            raise ValueError(f"adjudicate_result must be one of {', '.join(ADJUDICATE_RESULTS)}, "
                             f"got {self.adjudicate_result!r}")
        if self.n_scl < 0:
            raise ValueError(f"n_scl must be >= 0 (0 = off), got {self.n_scl}")
        if not 0 <= self.odds_start_prob <= 1:
            raise ValueError(f"odds_start_prob must be in [0, 1] (0 = off), got {self.odds_start_prob}")
        if self.odds_start_prob > 0 and self.game != "chess":
            raise ValueError(f"odds_start_prob (piece-odds starts) applies to chess only, not {self.game!r}")
        player_certainty = (self.certainty_propagation if self.eval_certainty_propagation == "same"
                            else self.eval_certainty_propagation)
        if self.n_scl and (self.certainty_propagation != "off" or player_certainty != "off"):
            raise ValueError("n_scl (search-contempt) and certainty_propagation cannot be on together yet: each is a "
                             "search extension of its own")
        if self.twofold_draws and self.game != "chess":
            raise ValueError(f"twofold_draws applies to chess only (Go forbids a repeated position, Connect Four "
                             f"cannot repeat), not {self.game!r}")
        if self.liberty_planes and not self.game.startswith("go_"):
            raise ValueError(f"liberty_planes (KataGo's liberty features) applies to Go only, not {self.game!r}")
        if self.liberty_planes and self.legacy_heads:
            raise ValueError("liberty_planes needs the normalised heads (legacy_heads=False)")
        if self.colour_plane and self.game != "connect_four":
            raise ValueError(f"colour_plane applies to connect_four only ({self.game!r}'s observation has a "
                             "colour plane of its own)")
        if self.global_pooling and not self.game.startswith("go_"):
            raise ValueError(f"global_pooling applies to Go only (its policy is one logit per point plus pass), "
                             f"not {self.game!r}")
        if self.policy_head not in ("dense", "conv"):
            raise ValueError(f"policy_head must be 'dense' or 'conv', got {self.policy_head!r}")
        if self.policy_head == "conv" and self.game != "chess":
            raise ValueError(f"policy_head='conv' applies to chess only (its moves start from a square), "
                             f"not {self.game!r}")
        if self.policy_head == "conv" and self.legacy_heads:
            raise ValueError("policy_head='conv' needs the normalised heads (legacy_heads=False)")
        if self.global_pooling and self.legacy_heads:
            raise ValueError("global_pooling needs the normalised heads (legacy_heads=False)")
        if self.value_head == "wdl" and self.legacy_heads:
            raise ValueError("value_head='wdl' needs the normalised heads (legacy_heads=False)")
        if self.value_head == "sai" and not self.game.startswith("go_"):
            raise ValueError(f"value_head='sai' (sigmoid-komi values) applies to Go only, not {self.game!r}")
        for name in ("sai_official_komi_share", "branch_prob", "sensible_lambda"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.max_branches < 0:
            raise ValueError(f"max_branches must be >= 0, got {self.max_branches}")
        if self.sensible_lambda > 0 and self.value_head != "sai":
            raise ValueError(f"sensible_lambda={self.sensible_lambda} needs value_head='sai' (the sigmoid heads)")
        if self.eval_sensible_lambda is not None:
            if not 0 <= self.eval_sensible_lambda <= 1:
                raise ValueError(f"eval_sensible_lambda must be in [0, 1] (or None: sensible_lambda's), "
                                 f"got {self.eval_sensible_lambda}")
            if self.eval_sensible_lambda > 0 and self.value_head != "sai":
                raise ValueError(f"eval_sensible_lambda={self.eval_sensible_lambda} needs value_head='sai' "
                                 "(the sigmoid heads)")
        for name in ("start_state_prob", "full_search_prob"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if not 0 <= self.td_lambda <= 1:
            raise ValueError(f"td_lambda must be in [0, 1], got {self.td_lambda}")
        if self.forced_playouts_k < 0:
            raise ValueError(f"forced_playouts_k must be >= 0, got {self.forced_playouts_k}")
        if self.value_head == "sai" and (self.start_state_prob < 1 or self.td_lambda < 1 or self.td_zero_unpredicted):
            raise ValueError("Go-Exploit starts and TDLeaf targets do not combine with value_head='sai' "
                             "(SAI has its own game starts and trains on z with kbar)")
        if self.full_search_prob < 1 and self.fast_simulations >= self.num_simulations:
            raise ValueError(f"fast_simulations ({self.fast_simulations}) must be below num_simulations "
                             f"({self.num_simulations}) for playout caps")
        if self.forced_playouts_k > 0 and (self.search != "puct" or self.n_scl != 0
                                           or self.certainty_propagation != "off"):
            raise ValueError("forced_playouts_k > 0 needs search='puct' without search-contempt (n_scl=0) or "
                             "certainty_propagation")
        for name in ("ownership_loss_weight", "score_loss_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (0 = off), got {getattr(self, name)}")
            if getattr(self, name) > 0 and not self.game.startswith("go_"):
                raise ValueError(f"{name} (KataGo's ownership and score targets) applies to Go only, not {self.game!r}")
            if getattr(self, name) > 0 and self.legacy_heads:
                raise ValueError(f"{name} needs the normalised heads (legacy_heads=False)")
        if not 0 <= self.score_utility_factor <= 1:
            raise ValueError(f"score_utility_factor must be in [0, 1] (0 = off), got {self.score_utility_factor}")
        if self.score_utility_scale <= 0:
            raise ValueError(f"score_utility_scale must be > 0, got {self.score_utility_scale}")
        if self.score_utility_factor > 0 and self.score_loss_weight <= 0:
            raise ValueError("score_utility_factor needs KataGo's score head (score_loss_weight > 0)")
        if not 0 <= self.material_prior_weight <= 1:
            raise ValueError(f"material_prior_weight must be in [0, 1] (0 = off), got {self.material_prior_weight}")
        if self.material_prior_scale <= 0:
            raise ValueError(f"material_prior_scale must be > 0 (pawns), got {self.material_prior_scale}")
        if self.material_prior_weight > 0 and self.game != "chess":
            raise ValueError(f"material_prior_weight (KnightCap's material start) applies to chess only, not "
                             f"{self.game!r}")
        if self.moves_left_loss_weight < 0:
            raise ValueError(f"moves_left_loss_weight must be >= 0 (0 = off), got {self.moves_left_loss_weight}")
        if self.moves_left_slope < 0:
            raise ValueError(f"moves_left_slope must be >= 0, got {self.moves_left_slope}")
        if not 0 <= self.moves_left_max_effect < 1:
            raise ValueError(f"moves_left_max_effect must be in [0, 1) (0 = the search ignores the head), "
                             f"got {self.moves_left_max_effect}")
        if self.moves_left_loss_weight > 0:
            if self.ownership_loss_weight > 0 or self.score_loss_weight > 0:
                raise ValueError("moves_left_loss_weight does not combine with KataGo's ownership and score targets "
                                 "(one auxiliary target at a time)")
            if self.value_head == "sai" or self.legacy_heads:
                raise ValueError("moves_left_loss_weight needs the tanh or win/draw/loss value head with normalised "
                                 "heads (not value_head='sai', not legacy_heads)")
        if self.dirichlet_alpha <= 0:
            raise ValueError(f"dirichlet_alpha must be > 0, got {self.dirichlet_alpha}")
        if not 0 <= self.swa_decay < 1:
            raise ValueError(f"swa_decay must be in [0, 1) (0 = no weight average), got {self.swa_decay}")
        if not 0 <= self.lr_end_fraction <= 1:
            raise ValueError(f"lr_end_fraction must be in [0, 1], got {self.lr_end_fraction}")
        if self.min_replay_size > self.replay_size:
            raise ValueError(f"min_replay_size ({self.min_replay_size}) exceeds replay_size ({self.replay_size})")
        if self.batch_size > self.replay_size:
            raise ValueError(f"batch_size ({self.batch_size}) exceeds replay_size ({self.replay_size})")

    # ----- (de)serialisation -----

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Config:
        if not isinstance(d, dict):
            raise ValueError(f"a config is a JSON object of field: value pairs, not a {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}")
        if "n_scl" in d and d["n_scl"] is None:  # written before 0 meant off
            d = {**d, "n_scl": 0}
        return cls(**{"legacy_heads": True, "head_hidden_norm": False, "value_target_q": "root", **d})

    @classmethod
    def from_json(cls, text: str) -> Config:
        return cls.from_dict(json.loads(text))

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    @property
    def replay_ratio(self) -> float:
        """Positions trained on per position played: SGD samples per loop step over the positions it writes."""
        return self.sgd_steps_per_step * self.batch_size / (self.num_envs * self.moves_per_step)

    def with_replay_ratio(self, ratio: float) -> Config:
        """The config with `sgd_steps_per_step` set so that its replay ratio is `ratio` (> 0; rounded to whole SGD
        steps, at least one)."""
        if not ratio > 0:
            raise ValueError(f"replay_ratio must be > 0, got {ratio}")
        positions = self.num_envs * self.moves_per_step
        return self.replace(sgd_steps_per_step=max(1, round(ratio * positions / self.batch_size)))

    def describe(self) -> str:
        """One `name = value` line per field under its group's name (`field_groups`), for printing a run's config."""
        lines = []
        for group, names in field_groups().items():
            lines.append(f"  {group}:")
            lines += [f"    {k} = {getattr(self, k)!r}" for k in names]
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Method:
    """One method on top of AlphaZero: its switch, the fields that set it, and where docs/methods.md gives its rules.

    on: whether `config` switches it on (AlphaZero's defaults: off).
    fields: the config fields that belong to it, the switch first.
    """

    name: str
    section: int | None
    fields: tuple[str, ...]
    on: Callable[[Config], bool]


def _set(name: str) -> Callable[[Config], bool]:
    """On where field `name` differs from its default, the AlphaZero value."""
    default = {f.name: f.default for f in dataclasses.fields(Config)}[name]
    return lambda config: getattr(config, name) != default


# The config's fields by what they belong to. Storage stays flat (`config.n_scl`, one flag per field, config.json
# field by field, a sweep's traced fields); these groups are how `--help`, `describe` and a run's start name them.
CORE_GROUPS: dict[str, tuple[str, ...]] = {
    "game": ("game", "komi", "start"),
    "network": ("num_blocks", "num_channels", "compute_dtype", "legacy_heads", "head_hidden_norm", "colour_plane",
                "policy_head"),
    "search": ("search", "eval_search", "num_simulations", "max_num_considered_actions", "gumbel_scale",
               "gumbel_c_visit", "gumbel_c_scale", "eval_max_num_considered_actions", "eval_gumbel_c_scale",
               "pb_c_init", "dirichlet_alpha", "dirichlet_fraction", "temperature_moves"),
    "self-play and replay": ("num_envs", "moves_per_step", "replay_size", "min_replay_size"),
    "training": ("batch_size", "sgd_steps_per_step", "learning_rate", "lr_warmup_steps", "lr_end_fraction",
                 "weight_decay", "value_loss_weight", "augment"),
    "run": ("num_steps", "seed", "log_every", "checkpoint_every", "eval_every", "eval_games", "eval_simulations",
            "eval_opponent_simulations", "value_probe_games"),
}
METHODS: tuple[Method, ...] = (
    Method("search-contempt", 1, ("n_scl",), _set("n_scl")),
    Method("SAI sigmoid-komi values", 2,
           ("value_head", "sai_official_komi_share", "branch_prob", "max_branches", "sensible_lambda",
            "eval_sensible_lambda",
            "start_queue_size"), lambda c: c.value_head == "sai"),
    Method("Go-Exploit start states", 3, ("start_state_prob", "archive", "archive_kind", "archive_size"),
           _set("start_state_prob")),
    Method("TDLeaf(lambda) targets", 4, ("td_lambda", "td_zero_unpredicted"),
           lambda c: c.td_lambda != 1.0 or c.td_zero_unpredicted),
    Method("KataGo's playout caps", 6, ("full_search_prob", "fast_simulations", "forced_playouts_k"),
           lambda c: c.full_search_prob != 1.0 or c.forced_playouts_k != 0.0),
    Method("KataGo's ownership and score targets", 7, ("ownership_loss_weight", "score_loss_weight"),
           lambda c: c.ownership_loss_weight != 0.0 or c.score_loss_weight != 0.0),
    Method("KataGo's score utility", 15, ("score_utility_factor", "score_utility_scale"),
           _set("score_utility_factor")),
    Method("KnightCap's material start", 16, ("material_prior_weight", "material_prior_scale"),
           _set("material_prior_weight")),
    Method("random openings", 8, ("random_opening_plies",), _set("random_opening_plies")),
    Method("KataGo's global pooling", 9, ("global_pooling",), _set("global_pooling")),
    Method("KataGo's liberty features", 17, ("liberty_planes",), _set("liberty_planes")),
    Method("Lc0's win/draw/loss head", 10, (), lambda c: c.value_head == "wdl"),  # value_head: listed under SAI
    Method("Lc0's two-fold draws", 11, ("twofold_draws",), _set("twofold_draws")),
    Method("Lc0's certainty propagation", 14, ("certainty_propagation", "eval_certainty_propagation"),
           lambda c: c.certainty_propagation != "off" or c.eval_certainty_propagation not in ("same", "off")),
    Method("Lc0's moves-left head", 12, ("moves_left_loss_weight", "moves_left_slope", "moves_left_max_effect"),
           _set("moves_left_loss_weight")),
    Method("odds starts", 13, ("odds_start_prob",), _set("odds_start_prob")),
    Method("material adjudication", None,
           ("adjudicate_plies", "adjudicate_margin", "adjudicate_result", "adjudicate_scale"),
           _set("adjudicate_plies")),
    Method("q-mixed value targets", None, ("value_target_q_weight", "value_target_q"), _set("value_target_q_weight")),
    Method("weight averaging (SWA)", None, ("swa_decay",), _set("swa_decay")),
    Method("warm start", None, ("init_from",), _set("init_from")),
)


def field_groups() -> dict[str, tuple[str, ...]]:
    """Every config field in exactly one group: the core groups, then one per method (`METHODS`)."""
    return {**CORE_GROUPS, **{m.name: m.fields for m in METHODS if m.fields}}


def methods_on(config: Config) -> list[str]:
    """The names of the methods `config` switches on (none: plain AlphaZero)."""
    return [m.name for m in METHODS if m.on(config)]


def inert_contempt(config: Config) -> str | None:
    """Why `config`'s search-contempt cannot act in self-play (None when it can, or is off): with `n_scl` at or
    above every simulation budget of its searches no opponent node ever freezes, and the search is AlphaZero's
    exactly (docs/methods.md section 1)."""
    budget = max(config.num_simulations, config.fast_simulations if config.full_search_prob < 1 else 0)
    if 0 < config.n_scl and config.n_scl >= budget:
        return (f"n_scl {config.n_scl} is inert at {budget} simulations a move (no opponent node freezes; the run "
                "would repeat alphazero's exactly)")
    return None


def _union_args(hint: Any) -> tuple[Any, ...]:
    return get_args(hint) if get_origin(hint) not in (None, Literal) else (hint,)


def _check_type(name: str, value: Any, hint: Any) -> None:
    origin = get_origin(hint)
    if origin is Literal:
        if value not in get_args(hint):
            choices = ", ".join(map(str, get_args(hint)))
            raise ValueError(f"{name} must be one of {choices}, got {value!r}")
        return
    allowed = tuple(a for a in get_args(hint)) if origin is not None else (hint,)
    if value is None and type(None) in allowed:
        return
    if bool in allowed:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        return
    if int in allowed and isinstance(value, int) and not isinstance(value, bool):
        return
    if float in allowed and isinstance(value, (int, float)) and not isinstance(value, bool):
        return
    if str in allowed and isinstance(value, str):
        return
    raise ValueError(f"{name} has the wrong type: {value!r}")


def parse_field(name: str, text: str) -> Any:
    """Parses a command-line value for config field `name`."""
    fields = {f.name: f for f in dataclasses.fields(Config)}
    if name not in fields:
        raise ValueError(f"unknown config field {name!r}")
    hint = get_type_hints(Config)[name]
    args = get_args(hint) if get_origin(hint) is not Literal else ()
    if text.lower() == "none" and type(None) in args:
        return None
    if hint is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} expects true/false, got {text!r}")
    try:
        if hint is int or (int in args and float not in args):
            return int(text)
        if hint is float or float in args:
            return float(text)
    except ValueError:
        raise ValueError(f"{name} expects a number, got {text!r}") from None
    return text


def config_flags(parser: argparse.ArgumentParser, exclude: tuple[str, ...] = ()) -> None:
    """A `--FIELD V` flag for every config field but the game and `exclude` (fields the command has flags of its
    own for), grouped as `field_groups` groups them; `config_overrides` reads them back. `azjax train`, `sweep` and
    `plan`, the bench and the scripts give their parsers every field this way."""
    defaults = {f.name: f.default for f in dataclasses.fields(Config)}
    sections = {m.name: m.section for m in METHODS}
    for title, names in field_groups().items():
        section = sections.get(title)
        group = parser.add_argument_group(
            f"config: {title}" + (f" (docs/methods.md section {section})" if section else "")
            + (" (override the preset)" if title == "game" else ""))
        for name in names:
            if name == "game" or name in exclude:
                continue
            group.add_argument(f"--{name}", dest=f"cfg_{name}", metavar="V", default=None,
                               help=f"(default {defaults[name]!r})")


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config fields given on the command line (`config_flags`), parsed (`parse_field`)."""
    out = {}
    for f in dataclasses.fields(Config):
        v = getattr(args, f"cfg_{f.name}", None)
        if v is not None:
            out[f.name] = parse_field(f.name, v)
    return out


# Presets: `quick` trains on a laptop CPU in minutes; `full` is sized for one GPU.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "connect_four": {
        # Measured (results/connect_four/connect_four_quick): ~18 minutes on 2 CPU cores. Each position is sampled
        # ~4 times (16 x 512 samples per 2048 new positions): this replay ratio learned faster per minute
        # than 1 or 2 did. Value targets 0.25 z + 0.75 q beat z alone (against mcts:200 at Gumbel 256: 0.80
        # with z, 0.91 with w = 0.5, 0.94 with w = 0.75; 200 games each; measured with q the root's mean
        # value, value_target_q="root").
        "quick": dict(num_blocks=3, num_channels=32, num_simulations=16, num_envs=256,
                      moves_per_step=8, replay_size=65536, min_replay_size=4096, batch_size=512,
                      sgd_steps_per_step=16, learning_rate=2e-3, num_steps=300, temperature_moves=10,
                      value_target_q_weight=0.75, eval_every=150, eval_games=32, eval_simulations=64),
        # `quick` for 1400 steps, every game opened by 0-12 random moves, the network told the colour to move:
        # random openings erred on fewer of Pons' positions, on every set, than Go-Exploit's search-state
        # archive in the same hour, and the colour plane on fewer again (results/connect_four/connect_four_hour/
        # random_openings, colour_plane). Sized for 60 minutes on 2 CPU cores split into 2 devices
        # (AZJAX_CPU_DEVICES=2, scripts/connect_four_hour.sh).
        "hour": dict(num_blocks=3, num_channels=32, num_simulations=16, num_envs=256,
                     moves_per_step=8, replay_size=65536, min_replay_size=4096, batch_size=512,
                     sgd_steps_per_step=16, learning_rate=2e-3, num_steps=1400, temperature_moves=10,
                     value_target_q_weight=0.75, eval_every=300, eval_games=32, eval_simulations=64,
                     random_opening_plies=12, colour_plane=True),
        "full": dict(num_blocks=6, num_channels=128, num_simulations=64, num_envs=1024,
                     moves_per_step=16, replay_size=1_000_000, min_replay_size=50_000, batch_size=1024,
                     sgd_steps_per_step=8, learning_rate=2e-3, num_steps=5000, eval_every=500,
                     eval_games=200, compute_dtype="bfloat16"),
    },
    "go_7x7": {
        "quick": dict(num_blocks=4, num_channels=32, num_simulations=32, num_envs=128,
                      moves_per_step=8, replay_size=65536, min_replay_size=4096, batch_size=256,
                      sgd_steps_per_step=2, num_steps=1000, temperature_moves=10, eval_every=250),
        "full": dict(num_blocks=6, num_channels=128, num_simulations=128, num_envs=1024,
                     moves_per_step=16, replay_size=1_000_000, min_replay_size=50_000, batch_size=1024,
                     sgd_steps_per_step=8, num_steps=10000, eval_every=1000, compute_dtype="bfloat16"),
        # SAI sigmoid-komi values on 2 CPU cores split into 2 devices (AZJAX_CPU_DEVICES=2, lab/sai_7x7/sai_7x7.py).
        # The learning rate decays to 2% and the weights are averaged, so the empty-board read-out moves slowly.
        # The replay window holds about 10k games (SAI trained on 8k-60k): with 1.3k the self-play level chased
        # the newest games. 3000 steps: at 1500, one seed in three had climbed to +9 and the others were still
        # climbing when the learning rate ran out (results/fidelity.md).
        "sai": dict(value_head="sai", num_blocks=3, num_channels=32, num_simulations=16, num_envs=128,
                    moves_per_step=8, replay_size=524288, min_replay_size=4096, batch_size=256,
                    sgd_steps_per_step=4, num_steps=3000, lr_end_fraction=0.02, swa_decay=0.99,
                    temperature_moves=8, eval_every=0, checkpoint_every=100, branch_prob=0.025, max_branches=3,
                    start_queue_size=1024),
        # SAI at the paper's network size (3 blocks of 128 filters) for one GPU: on the CPU the estimate settles
        # where its 16-simulation agent's self-play breaks even, which is not +9 on every seed
        # (results/fidelity.md), and the paper's runs searched more with a 4x wider network. 16 SGD steps of 1024
        # keep the `sai` preset's replay ratio of 1; the window holds about 40k games (SAI: 8k-60k). The learning
        # rate is held, the average doing the smoothing, so a run cut short by the clock (a GPU loan's
        # `sai_7x7` item) has trained on the same schedule as one that finishes.
        "sai_full": dict(value_head="sai", num_blocks=3, num_channels=128, num_simulations=64, num_envs=1024,
                         moves_per_step=16, replay_size=2_097_152, min_replay_size=65536, batch_size=1024,
                         sgd_steps_per_step=16, num_steps=1000, lr_end_fraction=1.0, swa_decay=0.99,
                         temperature_moves=8, eval_every=0, checkpoint_every=50, branch_prob=0.025, max_branches=3,
                         start_queue_size=8192),
    },
    "go_9x9": {
        "quick": dict(num_blocks=4, num_channels=32, num_simulations=32, num_envs=128,
                      moves_per_step=8, replay_size=65536, min_replay_size=4096, batch_size=256,
                      sgd_steps_per_step=2, num_steps=1000, temperature_moves=16, eval_every=250),
        # On an H200 SGD was 0.5% of a loop step with 8 SGD steps (results/gpu/NVIDIA_H200/bench_full_go_9x9.json,
        # breakdown), so 32 steps train each position played about twice (replay ratio 2, as the CPU presets)
        # for about 2% of the step.
        "full": dict(num_blocks=10, num_channels=128, num_simulations=200, num_envs=1024,
                     moves_per_step=16, replay_size=1_000_000, min_replay_size=100_000,
                     batch_size=1024, sgd_steps_per_step=32, num_steps=20000, eval_every=1000,
                     temperature_moves=30, compute_dtype="bfloat16"),
        # The second half of 9x9 in two CPU hours: the 7x7 `sai` network with KataGo's global pooling and
        # auxiliary heads (trained 55 minutes on 7x7) continues here with `--init_from`, its fields unchanged so
        # that every layer carries over, for 65 minutes on 2 cores (scripts/go_9x9_from_7x7.sh;
        # results/go_9x9/sai_pooled_from_7x7).
        "sai": dict(value_head="sai", global_pooling=True, ownership_loss_weight=1.5, score_loss_weight=0.1,
                    num_blocks=3, num_channels=32, num_simulations=16, num_envs=128, moves_per_step=8,
                    replay_size=524288, min_replay_size=4096, batch_size=256, sgd_steps_per_step=4,
                    num_steps=1900, lr_end_fraction=0.02, swa_decay=0.99, temperature_moves=12, eval_every=0,
                    checkpoint_every=100, branch_prob=0.025, max_branches=3, start_queue_size=1024),
        # From scratch in one GPU loan (at most 9 minutes of an H200 with the compile; scripts/gpu_loan.sh's
        # `loan_go_9x9` item), graded on the CPU against GNU Go. The CPU's two-hour model trained on 1.57M 9x9
        # positions played at 16 simulations by a 3x32 network, each trained on once (`sai` above, after 55 minutes
        # of 7x7; results/go_9x9/sai_pooled_from_7x7/metrics.csv). Here the same recipe with a 6x64 network, twice
        # the simulations and 2048 games in flight: 32,768 positions a loop step, trained on once (32 SGD steps of
        # 1024). The learning rate is held and the weights averaged, so a run the clock cuts short has trained on
        # the schedule of one that finishes. How many steps a loan gives is not measured yet.
        "loan": dict(value_head="sai", global_pooling=True, ownership_loss_weight=1.5, score_loss_weight=0.1,
                     num_blocks=6, num_channels=64, num_simulations=32, num_envs=2048, moves_per_step=16,
                     replay_size=2_097_152, min_replay_size=65536, batch_size=1024, sgd_steps_per_step=32,
                     num_steps=400, lr_end_fraction=1.0, swa_decay=0.99, temperature_moves=12, eval_every=0,
                     checkpoint_every=50, branch_prob=0.025, max_branches=3, start_queue_size=8192,
                     compute_dtype="bfloat16"),
    },
    "chess": {
        # Self-play games still running after 160 plies are adjudicated by material (3 pawns or more wins):
        # without it nearly every game of a young network is drawn and its value learns nothing
        # (results/models/chess_quick/README.md).
        "quick": dict(num_blocks=4, num_channels=32, num_simulations=16, num_envs=64,
                      moves_per_step=16, replay_size=32768, min_replay_size=4096, batch_size=256,
                      sgd_steps_per_step=4, num_steps=400, temperature_moves=20, eval_every=0,
                      dirichlet_alpha=0.3, adjudicate_plies=160, adjudicate_margin=3.0, swa_decay=0.99),
        # Sized for 100-130 minutes on 2 CPU cores split into 2 devices (scripts/chess_hour.sh). Games end at
        # 100 plies scored by the material lead (a lead of 3 pawns or more a win, smaller ones a part of one),
        # so nearly every game teaches the value something; each position is trained on about twice. Lc0's
        # win/draw/loss head and 0-12 random opening plies: the run with them played better and valued material
        # (results/chess_hour/wdl_random_openings) than the one without (results/chess_hour/proportional).
        # AlphaZero's convolutional chess policy head: with it the run mated random play in 37 of 40 games
        # (results/chess_hour/conv_policy), with the dense head in 14.
        # An adjudicated lead counts half a win (`adjudicate_scale`), so a mate is worth more than holding material:
        # the run with it (100 minutes, results/chess_hour/adjudicate_scale) mated the material player in 11 of 40
        # games, the run without in 4 (60 contended minutes; the two differ in length too).
        # A fifth of the games start at odds (`odds_start_prob`): the value then tells a queen up from a queen down
        # at the start, 0.34 apart against 0.24 (results/chess_hour/odds_starts_resumed). The player's Gumbel root
        # considers 64 moves at c_scale 1 (self-play keeps 16 at 0.1): it plays 95% of its mates in one, against 13%,
        # and scored 0.662 against the material player, against 0.562 (results/chess_hour/mate_in_one).
        "hour": dict(num_blocks=4, num_channels=32, num_simulations=16, num_envs=128,
                     moves_per_step=8, replay_size=65536, min_replay_size=4096, batch_size=256,
                     sgd_steps_per_step=8, num_steps=870, temperature_moves=20, eval_every=0,
                     dirichlet_alpha=0.3, adjudicate_plies=100, adjudicate_margin=3.0,
                     adjudicate_result="proportional", value_target_q_weight=0.5, swa_decay=0.99,
                     checkpoint_every=100, value_head="wdl", random_opening_plies=12, policy_head="conv",
                     adjudicate_scale=0.5, odds_start_prob=0.2, eval_max_num_considered_actions=64,
                     eval_gumbel_c_scale=1.0),
        # Sized to fit 40 GB (A100 40 GB, TPU v4 32 GB): a chess position keeps a 4672-move policy and 119 planes
        # (48 kB in the replay), and the search tree a full pgx state per node (`azjax plan`: results/plan/). With
        # 1024 games and 500k positions it needed 56 GiB per device, an 80 GB card.
        # The methods that made the `hour` preset learn come along (untried at this size): the conv policy head,
        # the win/draw/loss head, random openings, q-mixed value targets, averaged weights, and material
        # adjudication at a longer cap, for a young network's games are mostly drawn at any size.
        "full": dict(num_blocks=10, num_channels=128, num_simulations=200, num_envs=512,
                     moves_per_step=16, replay_size=200_000, min_replay_size=50_000, batch_size=1024,
                     sgd_steps_per_step=8, num_steps=50000, temperature_moves=30, eval_every=0,
                     compute_dtype="bfloat16", policy_head="conv", value_head="wdl", random_opening_plies=12,
                     adjudicate_plies=200, adjudicate_margin=3.0, adjudicate_result="proportional",
                     adjudicate_scale=0.5, value_target_q_weight=0.5, swa_decay=0.99),
    },
}


def preset(game: str, name: str = "quick", **overrides: Any) -> Config:
    """The named preset for `game`, with `overrides` applied."""
    if game not in PRESETS:
        raise ValueError(f"unknown game {game!r}; choose one of {', '.join(GAMES)}")
    if name not in PRESETS[game]:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS[game])}")
    return Config(game=game, **{**PRESETS[game][name], **overrides})
