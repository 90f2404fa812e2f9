"""`python -m navzoo.cli`: the `navzoo` command."""

import sys

from navzoo.cli.main import main

sys.exit(main())
