"""The XLA options training compiles with, for the tests that compare two programs bit for bit.

conftest.py compiles the tests with options that build faster (LLVM -O0, no fusion emitters). Those change how
XLA rounds (which ops fuse, where a multiply and an add contract into one), so two programs that agree bit for
bit as training compiles them can differ in the last bit as the tests compile them, and the other way round. A
bit-for-bit claim ("off equals AlphaZero") is a claim about the compiler users run, so these tests compile both
sides with its options: XLA's defaults, set per program over the test session's XLA_FLAGS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

PRODUCTION_XLA: dict[str, Any] = {"xla_backend_optimization_level": 3, "xla_cpu_use_fusion_emitters": True}


def production_jit(fun: Callable | None = None, **jit_kwargs: Any) -> Any:
    """`jax.jit` (also as a decorator, with or without arguments) compiling with `PRODUCTION_XLA`."""
    if fun is None:
        return lambda f: jax.jit(f, compiler_options=PRODUCTION_XLA, **jit_kwargs)
    return jax.jit(fun, compiler_options=PRODUCTION_XLA, **jit_kwargs)
