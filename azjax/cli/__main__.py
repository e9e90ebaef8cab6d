"""`python -m azjax.cli ...`: the `azjax` command line."""

import sys

from azjax.cli.main import main

sys.exit(main())
