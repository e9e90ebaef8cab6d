"""Batched tree search over a `Game` with mctx (docs/methods.md sections 0 and 1).

The modules: `game_search.py` (evaluators, the one recurrent function, `run_search` with PUCT or the Gumbel root,
the one move chooser `choose_move`), `policies.py` (AlphaZero's PUCT and Gumbel policies, mctx's step for step),
`contempt.py` (search-contempt, an extension of those policies), `core.py` (mctx's search loop with a backup
that does not copy the tree), `readout.py` (root statistics and principal variations), `layout.py` (a tree as wide
as the legal moves, for games with a `search_width`: chess).
"""

from azjax.search.game_search import (
    Evaluator,
    LeafFn,
    ParentAwareEvaluator,
    SearchSpec,
    choose_move,
    game_actions,
    game_recurrent_fn,
    gumbel_qtransform,
    make_recurrent_fn,
    mask_logits,
    network_evaluator,
    policy_value,
    root_fn,
    root_q_values,
    root_visit_counts,
    run_search,
    search_inputs,
    searched_choice,
)

__all__ = [
    "Evaluator",
    "LeafFn",
    "ParentAwareEvaluator",
    "SearchSpec",
    "choose_move",
    "game_actions",
    "game_recurrent_fn",
    "gumbel_qtransform",
    "make_recurrent_fn",
    "mask_logits",
    "network_evaluator",
    "policy_value",
    "root_fn",
    "root_q_values",
    "root_visit_counts",
    "run_search",
    "search_inputs",
    "searched_choice",
]
