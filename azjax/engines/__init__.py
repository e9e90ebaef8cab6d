"""Engines on the host: one position with a network and its search (engine), the GTP and UCI protocols,
batched analysis, game records (SGF/PGN) and fuzzing of the protocol loops."""
