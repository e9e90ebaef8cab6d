"""SAI on 7x7 Go: the empty-board estimate of Black's lead against perfect play's +9 (lab/README.md)."""
