"""Engines on the host: one position with a network and its search (engine), the GTP and UCI protocols,
batched analysis and game records (SGF/PGN). Their protocol fuzzers are in `lab.reliability.fuzz`."""
