"""Training: the jitted loop step and its host driver.

    from azjax.train import train
    summary = train(config, run_dir)             # a new run
    summary = train(None, run_dir, resume=True)  # continue a stopped run where it stopped

The modules: `loop.py` (the jitted loop step, `Trainer`), `driver.py` (`train`: runs the step and only logs,
evaluates and checkpoints), `run_dir.py` (a run directory's life: new or resumed, its config, metrics and
checkpoints), `sweep.py` (many runs as one program), `measures.py` (run measures), `plan.py`
(memory plans), `warm_start.py`, `plots.py`.
"""

from azjax.train.driver import NumericalFault, train
from azjax.train.run_dir import METRIC_COLUMNS, load_metrics, params_at_step

__all__ = ["METRIC_COLUMNS", "NumericalFault", "load_metrics", "params_at_step", "train"]
