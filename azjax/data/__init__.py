"""Data shipped with azjax: Pascal Pons' Connect Four test sets (README.md in this folder)."""
