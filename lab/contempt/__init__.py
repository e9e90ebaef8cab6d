"""Search-contempt: self-play decisiveness, repeated openings and play at odds (lab/README.md)."""
