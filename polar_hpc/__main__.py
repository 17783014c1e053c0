import sys

from polar_hpc.cli import main

sys.exit(main())
