"""Playing: agents, the one batched game loop of matches and Elo (arena), agent specs, tournaments with
external engines, and the measures and benchmarks built on them."""
