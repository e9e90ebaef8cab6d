"""The GTP and UCI engines in play: matches under a clock, tree reuse and an evaluation cache (lab/README.md)."""
