"""Reliability: the engines' and command line's fuzzers, the kill soak, the memory soak and the compile watch, with
their drivers (lab/README.md). Test harnesses, kept out of the azjax package."""
