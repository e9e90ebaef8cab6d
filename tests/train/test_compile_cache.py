"""The persistent compilation cache of the command line: where it lives, how to turn it off, and that
each command says which directory it uses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from azjax.compile_cache import compile_cache_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_jax_cache_dir():
    """JAX as a fresh process sees it: no cache directory given (the test session's is put back after)."""
    saved = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", None)
    yield
    jax.config.update("jax_compilation_cache_dir", saved)


def test_the_cache_directory_follows_azjax_then_jax_then_xdg(monkeypatch, tmp_path, no_jax_cache_dir):
    monkeypatch.delenv("AZJAX_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert compile_cache_dir() == os.path.expanduser("~/.cache/azjax/jax")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache_dir() == str(tmp_path / "xdg" / "azjax" / "jax")
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "given_to_jax"))
    assert compile_cache_dir() == str(tmp_path / "given_to_jax")
    monkeypatch.setenv("AZJAX_CACHE_DIR", str(tmp_path / "mine"))
    assert compile_cache_dir() == str(tmp_path / "mine")
    for off in ("off", "0", "none", ""):
        monkeypatch.setenv("AZJAX_CACHE_DIR", off)
        assert compile_cache_dir() is None


def _cli(args: list[str], **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AZJAX_", "JAX_COMPILATION_CACHE"))}
    clean.update(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", **env)
    return subprocess.run([sys.executable, "-m", "azjax.cli", *args], capture_output=True, text=True, env=clean,
                          timeout=300)


@pytest.mark.slow
def test_every_command_prints_its_cache_directory_on_stderr_and_the_flag_turns_it_off(tmp_path):
    # `play` of a missing run stops at once (exit status 2), after the cache line.
    on = _cli(["play", str(tmp_path / "missing")], XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert on.returncode == 2, on.stderr
    assert f"JAX compilation cache: {tmp_path / 'xdg' / 'azjax' / 'jax'}" in on.stderr
    assert "compilation cache" not in on.stdout  # stdout belongs to the GTP and UCI protocols
    off = _cli(["play", str(tmp_path / "missing"), "--no-compile-cache"], XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert off.returncode == 2 and "JAX compilation cache: off" in off.stderr
    off_env = _cli(["play", str(tmp_path / "missing")], AZJAX_CACHE_DIR="off")
    assert "JAX compilation cache: off" in off_env.stderr


def test_turning_the_cache_off_after_a_compile_stops_it_writing_and_turning_it_on_again_resumes(tmp_path):
    # JAX decides at a process's first compile whether it uses the cache; a switch after that must still hold.
    script = """
import jax, jax.numpy as jnp
from azjax.compile_cache import enable_compilation_cache
enable_compilation_cache()
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.jit(lambda x: jnp.sin(x) + 1)(jnp.ones(3)).block_until_ready()
before = {p.name for p in __import__("pathlib").Path(CACHE).iterdir()}
enable_compilation_cache(enabled=False)
jax.jit(lambda x: jnp.cos(x) * 7)(jnp.ones(3)).block_until_ready()
off = {p.name for p in __import__("pathlib").Path(CACHE).iterdir()}
enable_compilation_cache()
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.jit(lambda x: jnp.tan(x) - 3)(jnp.ones(3)).block_until_ready()
on = {p.name for p in __import__("pathlib").Path(CACHE).iterdir()}
print(len(before), len(off - before), len(on - off))
"""
    cache = tmp_path / "cache"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AZJAX_", "JAX_COMPILATION_CACHE"))}
    clean.update(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", AZJAX_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", f"CACHE = {str(cache)!r}\n{script}"], capture_output=True, text=True,
                         env=clean, timeout=300)
    assert out.returncode == 0, out.stderr
    written_first, written_while_off, written_after = map(int, out.stdout.split())
    assert written_first >= 1 and written_while_off == 0 and written_after >= 1, out.stdout
