"""``python -m teflon_py``: the ``teflon-py`` command."""
import sys

from teflon_py.cli import main

if __name__ == "__main__":
    sys.exit(main())
