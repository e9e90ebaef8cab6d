"""9x9 Go against GNU Go: how the model's games turn and how it loses them (lab/README.md)."""
