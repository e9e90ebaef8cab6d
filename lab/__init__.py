"""The studies: one package per question, each script run from the repository root as `python -m lab.STUDY.NAME`
(lab/README.md)."""
