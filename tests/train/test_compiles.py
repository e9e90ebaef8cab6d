"""No silent recompiles: a run builds its loop step once, at the first step; later steps, checkpoints,
evaluations and a resume compile no new step (counted from JAX's own compile events)."""

from __future__ import annotations

import pytest

from azjax.config import preset
from lab.reliability.compile_watch import STEP_FUNCTION, CompileWatch, watch_run_and_resume


@pytest.mark.slow
def test_the_step_compiles_once_per_trainer_through_checkpoints_evaluations_and_a_resume(tmp_path, tiny_overrides):
    # Steps 1-3, then a resume for 4-6. Checkpoints at 2, 3 (the stop) and 4, 6; evaluations at 2, 4 and 6,
    # so step 3 only checkpoints and step 6 is the resumed trainer's second evaluation.
    cfg = preset("connect_four", **{**tiny_overrides, "num_steps": 6, "checkpoint_every": 2, "eval_every": 2,
                                    "eval_games": 4, "eval_simulations": 4, "eval_opponent_simulations": 4})
    watch = watch_run_and_resume(cfg, tmp_path / "run", stop_after=3)

    step_builds = watch.of(STEP_FUNCTION)
    assert [(c.trainer, c.steps_done) for c in step_builds] == [(0, 0), (1, 0)], "once per trainer, at its first step"
    assert watch.after_first_step(STEP_FUNCTION) == 0
    # Whatever compiles after a trainer's first step is the first log line's bookkeeping (small eager ops and the
    # finiteness check, after step 1; in a process that ran another loop before, already built) and the first
    # evaluation's, after step 2 of the new run. The resumed trainer (same process) reuses both: `azjax.build` gives
    # one Game object per setting, so the match's jitted game loop is found in the cache. Nothing at the checkpoint
    # of step 3 or the evaluations at 4 and 6.
    later = {(c.trainer, c.steps_done) for c in watch.compilations if c.steps_done >= 1}
    assert later <= {(0, 1), (0, 2)}, watch.by_function(after_first_step=True)


@pytest.mark.slow
def test_the_watch_sees_a_recompile(tiny_overrides):
    """The counter can fail: a step given a state of another dtype is built again, and counted."""
    from azjax.train.loop import Trainer

    with CompileWatch() as watch:
        trainer = Trainer(preset("connect_four", **tiny_overrides))
        state, _ = trainer.step(trainer.init(0))
        state, _ = trainer.step(state)
        trainer.step(state.replace(step=state.step.astype("int16")))  # a silent recompile
    assert watch.after_first_step(STEP_FUNCTION) == 1
