"""Methods: one module per docs/methods.md section, each implementing named seams of the loop and the search.

`alphazero` holds the seams and AlphaZero's behaviour as their defaults (section 0); the other methods
replace one or more of them (`azjax.build` picks them from the config).
"""
