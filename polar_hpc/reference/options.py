"""The reference server's options, one Struct: ``polar-hpc serve-reference``'s flags (:data:`FLAGS`, with the
Struct's defaults), the command line a run or a test starts it with (:meth:`ReferenceOptions.command`) and what
``serve`` runs are all this Struct. Light (no torch): the CLI reads it at ``--help``.

The API key is not an option: it is passed in the environment (``API_KEY_ENV``), never on a command line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import msgspec

LogprobMode = Literal["processed", "original"]
"""processed: softmax(logits/T) as SGLang reports; original: raw log_softmax."""


class ReferenceOptions(msgspec.Struct, frozen=True, kw_only=True):
    """``port`` 0 picks a free port (see ``ready_file``). ``seed`` seeds requests that carry no ``sampling_seed``.
    ``context_length`` None: the model's ``max_position_embeddings``. ``served_model_name`` None: the model
    dir's name. ``threads`` None: half the cores, 1..4. ``ready_file``: the endpoint (url, pid) is written there
    as JSON once listening. ``decode_batch``: how many requests decode in one forward at most (1: one at a
    time). ``first_token_delay_s``, ``token_delay_s``: a deliberately slow engine."""

    host: str = "127.0.0.1"
    port: int = 30000
    seed: int = 0
    context_length: int | None = None
    served_model_name: str | None = None
    threads: int | None = None
    ready_file: str | None = None
    logprob_mode: LogprobMode = "processed"
    decode_batch: int = 16   # past ~16 rows a CPU forward costs in proportion to them
    first_token_delay_s: float = 0.0
    token_delay_s: float = 0.0

    def command(self, model_dir: str | Path, python: str = sys.executable) -> list[str]:
        """The ``polar-hpc serve-reference`` command line that runs a server with these options: host, port and
        seed always, the other options where they differ from the default."""
        cmd = [python, "-m", "polar_hpc", "serve-reference", "--model", str(model_dir)]
        for name, flag in FLAGS.items():
            value = getattr(self, name)
            if name in ALWAYS or (value is not None and value != getattr(DEFAULTS, name)):
                cmd += [flag, str(value)]
        return cmd


FLAGS: dict[str, str] = {
    "host": "--host",
    "port": "--port",
    "seed": "--seed",
    "context_length": "--context-length",
    "served_model_name": "--served-model-name",
    "threads": "--threads",
    "ready_file": "--ready-file",
    "logprob_mode": "--logprob-mode",
    "decode_batch": "--decode-batch",
    "first_token_delay_s": "--first-token-delay",
    "token_delay_s": "--token-delay",
}
"""The flag of every option (``polar-hpc serve-reference``), in command-line order."""
ALWAYS = frozenset({"host", "port", "seed"})
"""Options :meth:`ReferenceOptions.command` writes even at their default."""
DEFAULTS = ReferenceOptions()
