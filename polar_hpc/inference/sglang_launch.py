"""``python -m polar_hpc.inference.sglang_launch ARGS...``: SGLang's ``launch_server`` with the API key taken
from the environment instead of the command line.

An ``--api-key`` on a command line is readable by every user of the node (``ps``, ``/proc/PID/cmdline``); the
process environment is private to its owner. The server job puts the run token in ``POLAR_INFERENCE_API_KEY``;
this module removes it from the environment (SGLang's worker processes do not inherit it), appends it to
SGLang's argv in this process only, and runs ``sglang.launch_server`` as ``__main__``. Spawned workers get
their arguments through a pipe, never on a command line.
"""

from __future__ import annotations

import os
import runpy
import sys

from polar_hpc.wire.security import API_KEY_ENV

SGLANG_MODULE = "sglang.launch_server"


def main() -> None:
    key = os.environ.pop(API_KEY_ENV, "")
    args = sys.argv[1:]
    if "--api-key" in args:
        sys.exit(f"sglang_launch: pass the API key in ${API_KEY_ENV}, not as --api-key on the command line")
    sys.argv = [SGLANG_MODULE, *args, *(["--api-key", key] if key else [])]
    runpy.run_module(SGLANG_MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
