"""What a SAI Go model expects before and after Black's first move: its empty-board estimate next to its estimates one
ply later, and how sharply its policy picks the first move.

    python -m lab.sai_7x7.sai_first_move MODEL [MODEL ...] [--out results/sai_7x7/sai_7x7_first_move.json]

A SAI network's empty-board alpha0 (Black's expected lead on the board, docs/methods.md section 2) is the number
`lab/sai_7x7/sai_7x7.py` follows towards 7x7's perfect-play +9. It is learnt from self-play outcomes, so it is the value
of the self-play agent, opening randomness included, not of perfect play; and it can disagree with the same
network's estimates one move later. For each model this writes, from the network alone (no search):
`empty_board_black_lead` and its beta; `first_move_policy` (the policy's top moves with their probabilities, in
the game's notation); `black_lead_after` (Black's lead after each legal first move, as the network reads the
position with White to move); `policy_weighted_lead_after` (those leads weighted by the policy: what the network
expects one ply on if Black plays as its policy says); the lead after the policy's favourite move;
`policy_weighted_lead_by_ply` (Black's expected lead 0, 1 and 2 plies on when both sides play as the policy says:
every line of two moves, weighted by its probability); `greedy_line` (the policy's favourite move ply after ply for
`--greedy_plies` plies, with Black's lead after each: where the self-play window's sampled plies would go if they
were not sampled); and the command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="SAI models or run directories (value_head='sai')")
    p.add_argument("--top", type=int, default=5, help="first moves listed with their probabilities (default 5)")
    p.add_argument("--greedy_plies", type=int, default=8,
                   help="plies of the policy's favourite line read out (default 8: the sai preset's opening window)")
    p.add_argument("--out", default="results/sai_7x7/sai_7x7_first_move.json")
    return p.parse_args(argv)


def black_lead(alpha: np.ndarray, black_to_move: bool) -> np.ndarray:
    """Black's lead from the SAI head's alpha, which is the lead of the player to move."""
    return np.asarray(alpha, np.float64) * (1.0 if black_to_move else -1.0)


def legal_policy(logits: np.ndarray, legal_mask: np.ndarray) -> np.ndarray:
    """The policy over the legal moves ([..., A] logits and mask -> [..., A], zero where illegal)."""
    masked = np.where(legal_mask, logits, -np.inf)
    p = np.exp(masked - masked.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def first_move(model: str, top: int, greedy_plies: int = 8) -> dict[str, Any]:
    """The read-outs above for one model."""
    import jax
    import jax.numpy as jnp

    from azjax.build import board_game, jitted_sai_heads, load_model

    config, params = load_model(model)
    if config.value_head != "sai":
        raise SystemExit(f"{model} is not a SAI model (value_head={config.value_head!r})")
    game = board_game(config)
    heads = jitted_sai_heads(config, game)
    one = lambda state: jax.tree.map(lambda x: jnp.asarray(x)[None], state)  # noqa: E731  (a batch of one)
    root = game.init(jax.random.key(0))
    logits, alpha, beta = jax.device_get(heads(params, one(root)))
    legal = np.flatnonzero(np.asarray(root.legal_action_mask))
    policy = np.exp(logits[0, legal] - logits[0, legal].max())
    policy /= policy.sum()
    # Every first move at once: the children [M] as one batch, White to move in each, so Black's lead is -alpha.
    children = jax.vmap(game.step, in_axes=(None, 0))(root, jnp.asarray(legal, jnp.int32))
    child_logits, child_alpha, _ = jax.device_get(heads(params, children))
    lead_after = -np.asarray(child_alpha, np.float64)
    order = np.argsort(-policy)
    name = lambda a: game.action_to_str(root, int(a))  # noqa: E731

    # Two plies on: every legal reply b to every legal first move a ([M, A] grandchildren, Black to move again),
    # weighted by p(a) q(b | a). An illegal reply is stepped too (pgx ends that game) but weighs nothing.
    replies = legal_policy(np.asarray(child_logits), np.asarray(children.legal_action_mask))
    actions = jnp.arange(replies.shape[-1], dtype=jnp.int32)
    grandchildren = jax.vmap(lambda c: jax.vmap(game.step, in_axes=(None, 0))(c, actions))(children)
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), grandchildren)
    _, grand_alpha, _ = jax.device_get(heads(params, flat))
    lead_two_on = black_lead(grand_alpha, True).reshape(replies.shape)
    two_on = float(policy @ np.where(replies > 0, replies * lead_two_on, 0.0).sum(axis=1))

    # The favourite line: the policy's argmax ply after ply.
    line, state, logits_s = [], root, logits  # one evaluation a position: its logits pick the next move
    for ply in range(greedy_plies):
        if bool(state.terminated):
            break
        move = int(np.argmax(legal_policy(logits_s[0], np.asarray(state.legal_action_mask))))
        move_name = game.action_to_str(state, move)
        state = game.step(state, jnp.int32(move))
        logits_s, alpha_s, _ = jax.device_get(heads(params, one(state)))
        line.append([move_name, round(float(black_lead(alpha_s[0], ply % 2 == 1)), 3)])
    return {
        "model": model,
        "empty_board_black_lead": float(alpha[0]),
        "empty_board_beta": float(beta[0]),
        "first_move_policy": [[name(legal[i]), round(float(policy[i]), 4)] for i in order[:top]],
        "black_lead_after": {name(a): round(float(v), 3) for a, v in zip(legal, lead_after, strict=True)},
        "policy_weighted_lead_after": float(policy @ lead_after),
        "favourite_move": name(legal[order[0]]),
        "lead_after_favourite_move": float(lead_after[order[0]]),
        "policy_weighted_lead_by_ply": [float(alpha[0]), float(policy @ lead_after), two_on],
        "greedy_line": line,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from azjax.checkpoint import script_command, write_json

    rows = [first_move(m, args.top, args.greedy_plies) for m in args.models]
    write_json(args.out, {"models": rows, "command": script_command(__file__, argv)})
    for r in rows:
        print(f"{r['model']}: empty board Black {r['empty_board_black_lead']:+.2f}; after Black's first move "
              f"{r['policy_weighted_lead_after']:+.2f} (policy-weighted), {r['lead_after_favourite_move']:+.2f} after "
              f"{r['favourite_move']} (p {r['first_move_policy'][0][1]:.3f}); two plies on "
              f"{r['policy_weighted_lead_by_ply'][2]:+.2f}; along the favourite line "
              + " ".join(f"{m} {v:+.1f}" for m, v in r["greedy_line"]))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
