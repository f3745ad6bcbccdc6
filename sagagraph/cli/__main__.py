"""``python -m sagagraph.cli``: the same as the ``sagagraph`` command."""

import sys

from sagagraph.cli.entry import main

sys.exit(main())
