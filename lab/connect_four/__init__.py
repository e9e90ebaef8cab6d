"""Connect Four: Pons' test sets, OpenSpiel's MCTS-Solver and the methods' variants graded on them (lab/README.md)."""
