"""TDLeaf(lambda) (docs/methods.md section 4): principal-variation leaf values on hand-built and real mctx trees,
lambda-returns against a direct computation of the rule, lambda = 1 == outcome targets bit for bit, the
unpredicted-blunder option, and the z/q mix."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from azjax.games import make_game
from azjax.methods import tdleaf
from azjax.methods.alphazero import OutcomeTargets
from azjax.search import SearchSpec, run_search

# ---------------------------------------------------------------- principal-variation leaves


def _hand_tree() -> mctx.Tree:
    """Three searches of 4 simulations (5 nodes), built by hand with azjax's two-player conventions:
    edge discount -1 between plies, 0 into a terminal, reward = the mover's reward, raw value = the
    network's value for the player to move at the node (0 at terminals).

    0: root -a0 (3 visits)-> 1 -a2 (2)-> 3 -a1 (1)-> 4 (no children);  root -a1 (1)-> 2.
       PV = [0, 2, 1], leaf 4 at depth 3 (an odd depth: the opponent is to move there).
    1: root -a1 (2)-> 1, a win for the root's mover (reward +1, discount 0); node 1 was expanded once more
       below (a search re-entering a terminal), which the PV must not follow.  PV = [1], value +1.
    2: root -a2 (1)-> 1 -a0 (1)-> 2, the opponent wins there (reward +1 for the mover at 1).
       PV = [2, 0], value -1 for the root's mover.
    """
    b, n, a = 3, 5, 3
    f = lambda fill, shape, dt=np.float32: np.full(shape, fill, dt)  # noqa: E731
    visits, raw = f(0, (b, n), np.int32), f(0.0, (b, n))
    parents, afp = f(-1, (b, n), np.int32), f(-1, (b, n), np.int32)
    idx, cvis = f(-1, (b, n, a), np.int32), f(0, (b, n, a), np.int32)
    rew, disc = f(0.0, (b, n, a)), f(0.0, (b, n, a))

    def edge(t, p, act, c, nvis, r, d, v):
        idx[t, p, act], cvis[t, p, act], rew[t, p, act], disc[t, p, act] = c, nvis, r, d
        parents[t, c], afp[t, c], visits[t, c], raw[t, c] = p, act, nvis, v

    visits[:, 0] = [5, 3, 3]
    raw[:, 0] = [0.1, 0.2, 0.3]
    edge(0, 0, 0, 1, 3, 0.0, -1.0, 0.4)
    edge(0, 0, 1, 2, 1, 0.0, -1.0, -0.6)
    edge(0, 1, 2, 3, 2, 0.0, -1.0, 0.3)
    edge(0, 3, 1, 4, 1, 0.0, -1.0, 0.7)
    edge(1, 0, 1, 1, 2, 1.0, 0.0, 0.0)
    edge(1, 1, 0, 2, 1, 0.0, 0.0, 0.0)
    edge(2, 0, 2, 1, 2, 0.0, -1.0, 0.5)
    edge(2, 1, 0, 2, 1, 1.0, 0.0, 0.0)
    j = jnp.asarray
    return mctx.Tree(node_visits=j(visits), raw_values=j(raw), node_values=j(raw), parents=j(parents),
                     action_from_parent=j(afp), children_index=j(idx), children_prior_logits=j(np.zeros_like(rew)),
                     children_visits=j(cvis), children_rewards=j(rew), children_discounts=j(disc),
                     children_values=j(np.zeros_like(rew)), embeddings=j(np.zeros((b, n))),
                     root_invalid_actions=j(np.zeros((b, a))), extra_data=None)


def test_principal_variation_on_a_hand_built_tree() -> None:
    pv = jax.jit(tdleaf.principal_variation)(_hand_tree())
    np.testing.assert_array_equal(pv.actions, [[0, 2, 1, -1], [1, -1, -1, -1], [2, 0, -1, -1]])
    np.testing.assert_array_equal(pv.length, [3, 1, 2])
    np.testing.assert_array_equal(pv.leaf, [4, 1, 2])
    np.testing.assert_array_equal(pv.terminal, [False, True, True])
    # Leaf 4 is 3 plies down: the opponent is to move there, so its 0.7 is -0.7 for the root's mover.
    np.testing.assert_allclose(pv.value, [-0.7, 1.0, -1.0])
    short = tdleaf.principal_variation(_hand_tree(), max_length=2)
    np.testing.assert_array_equal(short.actions, [[0, 2], [1, -1], [2, 0]])
    np.testing.assert_allclose(short.value, [0.3, 1.0, -1.0])  # leaf 3, two plies down: the root's mover


def test_principal_variation_sign_would_fail_if_flipped() -> None:
    """A leaf value read without mctx's discounts (the raw value as if the root's mover were to move there)
    disagrees with the rule on the odd-depth leaf and on the opponent's win."""
    tree = _hand_tree()
    pv = tdleaf.principal_variation(tree)
    naive = np.where(np.asarray(pv.terminal), np.asarray(tree.children_rewards[:, 0].max(-1)),
                     np.asarray(tree.raw_values)[np.arange(3), np.asarray(pv.leaf)])
    assert not np.allclose(naive, pv.value)
    assert naive[0] == pytest.approx(0.7) and pv.value[0] == pytest.approx(-0.7)


GAME = make_game("connect_four")


def _evaluate(params, states):
    x = states.observation.reshape(states.observation.shape[0], -1).astype(jnp.float32)
    y = x @ params
    return y[:, :-1], jnp.tanh(y[:, -1])


@pytest.mark.slow
def test_principal_variation_on_real_searches_matches_the_leaf_state() -> None:
    """On Connect Four searches from late positions (terminal leaves appear), the PV value equals the leaf
    state's own evaluation, or its terminal reward, seen by the root's player: an outside check that reads the
    players from the game states, not from mctx's signs."""
    b = 16
    params = 0.05 * jax.random.normal(jax.random.key(1), (int(np.prod(GAME.observation_shape)), GAME.num_actions + 1))
    states = jax.vmap(GAME.init)(jax.random.split(jax.random.key(0), b))
    key = jax.random.key(2)
    for ply in range(30):  # 0 to 30 random legal plies (game i stops after 2 i); finished games stay so
        key, k = jax.random.split(key)
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
        act = jax.random.categorical(k, jnp.where(states.terminated[:, None], 0.0, logits))
        moved = jax.vmap(GAME.step)(states, act)
        go = (ply < 2 * jnp.arange(b)).reshape(-1, 1)
        states = jax.tree.map(lambda m, s, go=go: jnp.where(go.reshape(-1, *([1] * (s.ndim - 1))), m, s),
                              moved, states)
    spec = SearchSpec(kind="puct", num_simulations=24, dirichlet_fraction=0.0)
    out = jax.jit(lambda s: run_search(spec, GAME, _evaluate, params, jax.random.key(3), s))(states)
    pv = tdleaf.principal_variation(out.search_tree)
    leaf = jax.tree.map(lambda x: x[jnp.arange(b), pv.leaf], out.search_tree.embeddings)
    root_player = states.current_player
    _, leaf_value = _evaluate(params, leaf)
    same = leaf.current_player == root_player
    expected = jnp.where(leaf.terminated, leaf.rewards[jnp.arange(b), root_player],
                         jnp.where(same, leaf_value, -leaf_value))
    live = ~states.terminated
    assert int(live.sum()) >= 8 and bool((pv.terminal & live).any()) and bool((~pv.terminal & live).any())
    np.testing.assert_allclose(np.asarray(pv.value)[live], np.asarray(expected)[live], atol=1e-6)
    # The path is the search's: its first move is the most visited root child.
    np.testing.assert_array_equal(pv.actions[:, 0][live], jnp.argmax(out.search_tree.children_visits[:, 0], -1)[live])


# ---------------------------------------------------------------- lambda-returns


def _direct(v, player, z, continues, lam, predicted=None, flip=False):
    """The rule, position by position: G_t = v_t + sum_{j>=t} lam^(j-t) d_j, every value put in the view of
    t's player (`flip` breaks that on purpose), z in place of the value after the game's last position."""
    t_len = len(v)
    out = np.zeros(t_len)
    for t in range(t_len):
        end = t
        while continues[end] and end + 1 < t_len:
            end += 1
        view = lambda j, t=t: 1.0 if (player[j] == player[t]) != flip else -1.0  # noqa: E731
        u = [view(j) * v[j] for j in range(t, end + 1)] + [z[t]]
        g = v[t]
        for j in range(t, end + 1):
            d = u[j - t + 1] - u[j - t]
            if predicted is not None and player[j] != player[t] and d > 0 and not predicted[j]:
                d = 0.0
            g += lam ** (j - t) * d
        out[t] = g
    return out


def _trajectories():
    """One column holding three games back to back (as a replay ring's slot does): an alternating game won
    by player 1, a drawn one, and one where player 0 moves twice in a row (a pass-like turn)."""
    rng = np.random.default_rng(0)
    player = np.array([0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0])
    game = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    winner = {0: 1, 1: None, 2: 0}
    z = np.array([0.0 if winner[g] is None else (1.0 if p == winner[g] else -1.0)
                  for p, g in zip(player, game, strict=True)])
    v = rng.uniform(-0.9, 0.9, len(player)).round(3)
    continues = np.append(game[1:] == game[:-1], False)
    predicted = rng.uniform(size=len(player)) < 0.4
    return v, player, z, continues, predicted


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.7, 0.95])
def test_lambda_returns_equal_the_direct_rule(lam: float) -> None:
    v, player, z, continues, predicted = _trajectories()
    got = tdleaf.lambda_returns(jnp.asarray(v), jnp.asarray(player), jnp.asarray(z), jnp.asarray(continues), lam)
    np.testing.assert_allclose(got, _direct(v, player, z, continues, lam), atol=1e-5)
    assert not np.allclose(got, _direct(v, player, z, continues, lam, flip=True), atol=1e-3)  # a flipped view fails
    got = tdleaf.lambda_returns(jnp.asarray(v), jnp.asarray(player), jnp.asarray(z), jnp.asarray(continues), lam,
                                predicted=jnp.asarray(predicted))
    np.testing.assert_allclose(got, _direct(v, player, z, continues, lam, predicted), atol=1e-5)
    # Every game's last position gets its outcome.
    np.testing.assert_array_equal(np.asarray(got)[~continues], z[~continues])


def test_lambda_returns_by_hand() -> None:
    """TD(0) on three alternating plies: each target is the next leaf value seen by the mover, so the signs
    show; the last position's target is its outcome."""
    g = tdleaf.lambda_returns(jnp.array([0.2, -0.1, 0.5]), jnp.array([0, 1, 0]), jnp.array([1.0, -1.0, 1.0]),
                              jnp.array([True, True, False]), 0.0)
    np.testing.assert_allclose(g, [0.1, -0.5, 1.0], rtol=1e-6)
    # lambda = 0.5: G_1 = 0.5 (-0.5) + 0.5 (-1) = -0.75, G_0 = 0.5 (0.1) + 0.5 (0.75) = 0.425.
    g = tdleaf.lambda_returns(jnp.array([0.2, -0.1, 0.5]), jnp.array([0, 1, 0]), jnp.array([1.0, -1.0, 1.0]),
                              jnp.array([True, True, False]), 0.5)
    np.testing.assert_allclose(g, [0.425, -0.75, 1.0], rtol=1e-6)


def test_unpredicted_blunder_is_not_learned() -> None:
    """Player 0 expects a loss (v_0 = -0.8); the opponent's unpredicted move at ply 1 throws the game (its own
    value drops from 0.8 to a loss). Player 0's TD(0) target ignores the gain; predicted, it keeps it."""
    v, player, z, cont = (jnp.array([-0.8, 0.8, 0.9]), jnp.array([0, 1, 0]), jnp.array([1.0, -1.0, 1.0]),
                          jnp.array([True, True, False]))
    plain = tdleaf.lambda_returns(v, player, z, cont, 1.0)
    np.testing.assert_array_equal(plain, z)
    guarded = tdleaf.lambda_returns(v, player, z, cont, 1.0, predicted=jnp.array([False, False, False]))
    # Position 0: d_0 = -0.8 - (-0.8) = 0 (own move), d_1 = 0.9 - (-0.8) > 0 by an opponent move: zeroed,
    # d_2 = 1 - 0.9 (own move): G_0 = -0.8 + 0 + 0 + 0.1 = -0.7. Positions 1, 2 see no opponent gain.
    np.testing.assert_allclose(guarded, [-0.7, -1.0, 1.0], atol=1e-6)
    kept = tdleaf.lambda_returns(v, player, z, cont, 1.0, predicted=jnp.array([False, True, False]))
    np.testing.assert_array_equal(kept, z)
    assert bool(tdleaf.move_predicted(jnp.array([3, 4]), jnp.int32(3), jnp.int32(4)))
    assert not bool(tdleaf.move_predicted(jnp.array([3, 4]), jnp.int32(2), jnp.int32(4)))
    assert not bool(tdleaf.move_predicted(jnp.array([3, -1]), jnp.int32(3), jnp.int32(-1)))


def test_lambda_one_is_the_outcome_bit_for_bit_and_composes_with_the_q_mix() -> None:
    """lambda = 1 (no blunder option) gives z itself, on a replay-shaped [T, B] batch with draws; in the z/q
    mix the target takes z's place, so the mixed targets equal AlphaZero's own (OutcomeTargets), bit for bit."""
    t, b = 12, 4
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    player = jnp.tile((jnp.arange(t) % 2)[:, None], (1, b)).astype(jnp.int32)
    final = jax.random.choice(k1, jnp.array([-1.0, 0.0, 1.0]), (b,))
    z = jnp.where(player == (t - 1) % 2, final, -final) + 0.0  # no -0.0
    v = jax.random.uniform(k2, (t, b), minval=-1, maxval=1)
    cont = jnp.ones((t, b), bool).at[5, 1].set(False)  # slot 1 holds two games
    g = jax.jit(tdleaf.lambda_returns)(v, player, z, cont, 1.0)
    assert np.asarray(g).tobytes() == np.asarray(z).tobytes()
    q = jax.random.uniform(k3, (t * b,), minval=-1, maxval=1)
    for w in (0.0, 0.25):
        ours = tdleaf.mix_with_q(g.reshape(-1), q, w)
        targets = OutcomeTargets(q_weight=w)
        recorded = {"q": q} if targets.records else {}
        assert np.asarray(ours).tobytes() == np.asarray(targets.value_target(z.reshape(-1), recorded)).tobytes()
    assert not np.array_equal(tdleaf.lambda_returns(v, player, z, cont, 0.7), z)


# ---------------------------------------------------------------- in the loop: the replay ring and the seam


def _ring(lam_view: bool = False):
    """A replay ring of R = 6 rows x B = 2 slots whose newest row is row 2 (ptr = 4): read from row 3 on,
    slot 0 holds game 4 (rows 3..0) then game 5 (rows 1, 2); slot 1 holds one game (ids 7) throughout,
    alternating players, with a pass-like repeat in slot 0."""
    from azjax import replay as rb

    rows, b = 6, 2
    order = [3, 4, 5, 0, 1, 2]
    game = np.zeros((rows, b), np.int32)
    player = np.zeros((rows, b), np.int32)
    for t, r in enumerate(order):
        game[r] = [4 if t < 4 else 5, 7]
        player[r] = [[0, 1, 1, 0, 0, 1][t], t % 2]
    rng = np.random.default_rng(1)
    z = np.where(player == 0, 1.0, -1.0).astype(np.float32)
    v = rng.uniform(-0.9, 0.9, (rows, b)).astype(np.float32)
    replay = rb.init_replay(rows * b, (1,), jnp.float32, 3, extras=("pv_value",))
    replay = replay.replace(game_id=jnp.asarray(game.reshape(-1)), player=jnp.asarray(player.reshape(-1)),
                            value=jnp.asarray(z.reshape(-1)), has_target=jnp.ones(rows * b, bool),
                            extras={"pv_value": jnp.asarray(v.reshape(-1))})
    return replay, order, game, player, z, v


@pytest.mark.parametrize("lam", [0.0, 0.7, 1.0])
def test_ring_lambda_returns_read_each_slot_as_its_trajectories_in_time_order(lam: float) -> None:
    replay, order, game, player, z, v = _ring()
    got = np.asarray(tdleaf.ring_lambda_returns(replay, jnp.int32(4), 2, lam, False)).reshape(6, 2)
    for slot in range(2):
        g, p, zz, vv = (x[order, slot] for x in (game, player, z, v))
        cont = np.append(g[1:] == g[:-1], False)
        np.testing.assert_allclose(got[order, slot], _direct(vv, p, zz, cont, lam), atol=1e-5)
    if lam < 1:  # read in ring order instead of time order, the targets differ
        wrong = np.asarray(tdleaf.ring_lambda_returns(replay, jnp.int32(10), 2, lam, False))
        assert not np.allclose(wrong, got.reshape(-1))


def test_tdleaf_targets_at_lambda_one_end_games_as_outcome_targets_do_bit_for_bit() -> None:
    replay, *_ = _ring()
    replay = replay.replace(has_target=jnp.zeros_like(replay.has_target), value=jnp.zeros_like(replay.value))
    ended = jnp.array([True, False])
    game_id = jnp.array([5, 7])
    rewards = jnp.array([[-1.0, 1.0], [0.0, 0.0]])
    ours = tdleaf.TDLeafTargets(lam=1.0).game_ended(replay, jnp.int32(4), ended, game_id, rewards)
    az = OutcomeTargets().game_ended(replay, jnp.int32(4), ended, game_id, rewards)
    assert np.asarray(ours.value).tobytes() == np.asarray(az.value).tobytes()
    np.testing.assert_array_equal(ours.has_target, az.has_target)
    assert int(az.has_target.sum()) == 2  # game 5 of slot 0, rows 1 and 2
    td = tdleaf.TDLeafTargets(lam=0.5).game_ended(replay, jnp.int32(4), ended, game_id, rewards)
    np.testing.assert_array_equal(td.has_target, az.has_target)
    assert not np.array_equal(td.value, az.value)
    # Only the ended game's entries changed; its last position (row 2) keeps its outcome.
    np.testing.assert_array_equal(np.asarray(td.value)[~np.asarray(az.has_target)], 0.0)
    assert float(td.value[4]) == float(az.value[4])


def test_ring_lambda_returns_read_predictions_from_the_previous_search_of_the_same_game() -> None:
    """With the blunder option, move j counts as predicted when the search at j - 1 of the same game played its
    PV's first move and the reply was its second: the ring's records give the same targets as the flags."""
    replay, order, game, player, z, v = _ring()
    rows, b = 6, 2
    rng = np.random.default_rng(2)
    action = rng.integers(0, 3, (rows, b))
    # Each search played its PV's first move; in time order, every other search foresaw the reply.
    second = np.zeros((rows, b), np.int64)
    for t, r in enumerate(order[:-1]):
        reply = action[order[t + 1]]
        second[r] = np.where(t % 2 == 0, reply, (reply + 1) % 3)
    pv = np.stack([action, second], axis=-1)
    replay = replay.replace(extras={**replay.extras,
                                    "pv_first": jnp.asarray(pv[..., 0].reshape(-1), jnp.float32),
                                    "pv_second": jnp.asarray(pv[..., 1].reshape(-1), jnp.float32),
                                    "action": jnp.asarray(action.reshape(-1), jnp.float32)})
    got = np.asarray(tdleaf.ring_lambda_returns(replay, jnp.int32(4), b, 0.8, True)).reshape(rows, b)
    for slot in range(b):
        g, p, zz, vv, a, second = (x[order, slot] for x in (game, player, z, v, action, pv[..., 1]))
        cont = np.append(g[1:] == g[:-1], False)
        predicted = np.array([j > 0 and cont[j - 1] and second[j - 1] == a[j] for j in range(rows)])
        assert predicted.any() and not predicted[1:].all()
        np.testing.assert_allclose(got[order, slot], _direct(vv, p, zz, cont, 0.8, predicted), atol=1e-5)
