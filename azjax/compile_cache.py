"""JAX's persistent compilation cache, as the command line and the scripts use it: a second run of the same config
skips compilation.

    enable_compilation_cache()                  # AZJAX_CACHE_DIR, JAX's own directory, or ~/.cache/azjax/jax
    enable_compilation_cache(enabled=False)     # off, even after this process has compiled

Importing this module does nothing else (JAX itself is imported when a function runs). It imports nothing of azjax.
"""

from __future__ import annotations

import os
import sys

OFF_WORDS = ("", "0", "off", "none", "false")  # values of AZJAX_CACHE_DIR that mean "no cache"


def compile_cache_dir() -> str | None:
    """Where the persistent compilation cache lives; None when it is off.

    In order: `AZJAX_CACHE_DIR` (a directory, or `off`), a directory already given to JAX (e.g. by
    `JAX_COMPILATION_CACHE_DIR`), then `$XDG_CACHE_HOME/azjax/jax` (default `~/.cache/azjax/jax`).
    """
    import jax

    env = os.environ.get("AZJAX_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in OFF_WORDS else os.path.expanduser(env)
    if jax.config.jax_compilation_cache_dir:
        return jax.config.jax_compilation_cache_dir
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(xdg, "azjax", "jax")


def enable_compilation_cache(enabled: bool = True, announce: bool = False) -> str | None:
    """JAX's persistent compilation cache: a second run of the same config skips compilation.

    Returns the directory (None when off). `announce` prints it on stderr (stdout belongs to GTP/UCI).
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    cache = compile_cache_dir() if enabled else None
    if cache is not None:
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_enable_compilation_cache", True)
        # Only programs that took a while to build are worth a disk entry (the loop takes many seconds).
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    else:  # also against a directory given to JAX by its own variables
        jax.config.update("jax_enable_compilation_cache", False)
    # JAX decides once per process, at its first compile, whether the cache is used: without this reset a switch
    # made after anything was compiled (an in-process command, a test) would be silently ignored.
    compilation_cache.reset_cache()
    if announce:
        where = cache or "off (--no-compile-cache or AZJAX_CACHE_DIR=off)"
        print(f"JAX compilation cache: {where}", file=sys.stderr, flush=True)
    return cache
