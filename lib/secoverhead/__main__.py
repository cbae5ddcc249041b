"""`python -m secoverhead`: the console script by another name (what a scheduler without the script on its PATH
runs)."""

import sys

from secoverhead.app.entry import main

sys.exit(main())
