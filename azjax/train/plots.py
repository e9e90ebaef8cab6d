"""Learning-curve plots written into the run directory (matplotlib, no display needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _col(rows: list[dict[str, Any]], key: str) -> list[float]:
    out = []
    for r in rows:
        try:
            out.append(float(r[key]))
        except (KeyError, TypeError, ValueError):
            out.append(math.nan)
    return out


def _smooth(y: list[float], n: int) -> list[float]:
    """Trailing mean over up to n finite values."""
    out, window = [], []
    for v in y:
        if math.isfinite(v):
            window.append(v)
        window = window[-n:]
        out.append(sum(window) / len(window) if window else math.nan)
    return out


def save_figure(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Lays out `fig`, writes it to `path` (creating its folder) and closes it."""
    path = Path(path)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def plot_run(run_dir: str | Path, rows: list[dict[str, Any]], evals: list[dict[str, Any]]) -> Path | None:
    """Writes RUN_DIR/curves.png: losses, evaluation score, game length and self-play results."""
    if not rows:
        return None
    n = max(1, len(rows) // 50)
    minutes = [t / 60 for t in _col(rows, "time_s")]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    ax = axes[0, 0]
    for key in ("loss", "policy_loss", "value_loss"):
        ax.plot(minutes, _smooth(_col(rows, key), n), label=key)
    ax.set(title="training loss", xlabel="minutes", ylabel="loss")
    ax.legend()
    ax = axes[0, 1]
    if evals:
        t = [v / 60 for v in _col(evals, "time_s")]
        s, lo, hi = _col(evals, "score"), _col(evals, "score_low"), _col(evals, "score_high")
        ax.plot(t, s, "o-", label=f"vs {evals[-1].get('opponent', 'opponent')}")
        ax.fill_between(t, lo, hi, alpha=0.25)
        ax.legend()
    ax.set(title="evaluation score (95% CI)", xlabel="minutes", ylabel="score", ylim=(0, 1))
    ax = axes[1, 0]
    ax.plot(minutes, _smooth(_col(rows, "mean_game_length"), n))
    ax.set(title="mean self-play game length", xlabel="minutes", ylabel="moves")
    ax = axes[1, 1]
    games = _col(rows, "games")
    for key, label in (("first_player_wins", "first player wins"), ("draws", "draws"),
                       ("first_player_losses", "first player losses")):
        frac = [c / g if g else math.nan for c, g in zip(_col(rows, key), games, strict=True)]
        ax.plot(minutes, _smooth(frac, n), label=label)
    ax.set(title="self-play results", xlabel="minutes", ylabel="fraction", ylim=(0, 1))
    ax.legend()
    fig.suptitle(str(Path(run_dir).name))
    return save_figure(fig, Path(run_dir) / "curves.png", dpi=90)
