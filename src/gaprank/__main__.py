"""``python -m gaprank``: the ``gaprank`` command line."""

import sys

from .cli.main import main

if __name__ == "__main__":  # importing the module (documentation tools do) runs nothing
    sys.exit(main())
