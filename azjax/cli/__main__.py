"""`python -m azjax.cli ...`: the `azjax` command line."""

import sys

from azjax.cli import main

sys.exit(main())
