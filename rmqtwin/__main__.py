"""``python -m rmqtwin`` is the same as the ``rmqtwin`` command."""

import sys

from rmqtwin.cli import main

sys.exit(main())
