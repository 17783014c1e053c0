import sys

from polar_hpc.cli.entry import main

sys.exit(main())
