"""Chess probes: mates in one, material, one-move tactics and how games ended (lab/README.md)."""
