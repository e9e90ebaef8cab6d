"""What users run: reproductions, benches, the GPU run-books and the repository's own tooling (scripts/README.md).
A package so that each Python script runs as a module from the repository root, `python -m scripts.NAME`."""
