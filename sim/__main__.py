"""``python -m sim``: see ``sim.cli``."""

import sys

from sim.cli import main

if __name__ == "__main__":
    sys.exit(main())
