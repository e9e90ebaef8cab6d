"""A pytest plugin for the record, not a test: it flips the gradient's sign in every trainer of
tests/train/test_learning.py (through that file's own `_flip_the_gradients_sign`), so that its learning tests can be
seen to fail when SGD ascends instead of descending.

    PYTHONPATH=tests python -m pytest -n 0 -p flip_gradient_sign tests/train/test_learning.py -k "lowers or teaches"
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _flip_every_trainer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    module = next((m for name, m in list(sys.modules.items()) if name.endswith("test_learning")), None)
    if module is not None:
        c4, sai = module._c4_trainer, module._sai_trainer
        monkeypatch.setattr(module, "_c4_trainer", lambda o: module._flip_the_gradients_sign(c4(o)))
        monkeypatch.setattr(module, "_sai_trainer", lambda o: module._flip_the_gradients_sign(sai(o)))
    yield
