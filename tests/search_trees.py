"""Checks of a finished search tree shared by the search and engine tests (a helper module, not a test)."""

from __future__ import annotations

import mctx
import numpy as np


def assert_valid_tree(tree: mctx.Tree, rtol: float = 1e-5, root_afresh: bool = False) -> None:
    """The invariants of mctx's search trees, for every game of a batched `tree` ([B, N] nodes):

      * the root and every node with a parent were visited, the other nodes never (they are unused);
      * a node's visits are 1 + its children's visits (no max_depth cut-off in these searches);
      * children_index, parents and action_from_parent agree, each child's index is above its parent's, and the
        parent's per-child visits and values are the child's own;
      * a node's value is the visit-weighted mean of its own network value and its children's returns
        reward + discount x child value.

    root_afresh: the root was started afresh over kept children (a reused Gumbel root): its per-child visits count
    only this search's visits to each child (at most the child's own), its per-child values are the children's where
    it visited them, and its value averages this search's returns only (not checked).
    """
    t = {name: np.asarray(getattr(tree, name)) for name in ("node_visits", "raw_values", "node_values", "parents",
                                                            "action_from_parent", "children_index", "children_visits",
                                                            "children_values", "children_rewards",
                                                            "children_discounts")}
    for b in range(t["node_visits"].shape[0]):
        visits, parents, children = t["node_visits"][b], t["parents"][b], t["children_index"][b]
        used = (parents >= 0) | (np.arange(len(parents)) == mctx.Tree.ROOT_INDEX)
        assert (visits[used] > 0).all() and (visits[~used] == 0).all(), f"game {b}: visits of used/unused nodes"
        assert (children[~used] == mctx.Tree.UNVISITED).all()
        np.testing.assert_array_equal(visits[used], 1 + t["children_visits"][b][used].sum(-1), err_msg=f"game {b}")
        for n, a in zip(*np.nonzero(children >= 0), strict=True):
            c = children[n, a]
            assert c > n and parents[c] == n and t["action_from_parent"][b, c] == a, (b, n, a, c)
            if root_afresh and n == mctx.Tree.ROOT_INDEX:
                assert t["children_visits"][b, n, a] <= visits[c], (b, n, a)
                if t["children_visits"][b, n, a] == 0:
                    continue
            else:
                assert t["children_visits"][b, n, a] == visits[c], (b, n, a)
            assert t["children_values"][b, n, a] == t["node_values"][b, c], (b, n, a)
        assert (t["children_visits"][b][children < 0] == 0).all()
        returns = t["children_rewards"][b] + t["children_discounts"][b] * t["children_values"][b]  # [N, A]
        mean = (t["raw_values"][b] + (t["children_visits"][b] * returns).sum(-1)) / np.maximum(visits, 1)
        checked = used & ((np.arange(len(used)) != mctx.Tree.ROOT_INDEX) | (not root_afresh))
        np.testing.assert_allclose(t["node_values"][b][checked], mean[checked], rtol=rtol, atol=1e-5,
                                   err_msg=f"game {b}")
