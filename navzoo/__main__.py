"""`python -m navzoo`: the `navzoo` command."""

import sys

from navzoo.cli.main import main

sys.exit(main())
