"""python3 -m tether_client plot|animate ...: see tether_client.cli."""

import sys

from tether_client.cli import main

sys.exit(main())
