"""A runtime backend is its module's ``Backend`` plus one line of ``config.run.RUNTIME_BACKENDS``."""

from __future__ import annotations

from typing import get_args

import pytest

from polar_hpc.config import ConfigError
from polar_hpc.config.run import RUNTIME_BACKENDS, RuntimeBackend
from polar_hpc.images.prepare import ENGINES
from polar_hpc.runtime import BACKENDS, Backend, all_backends, backend


def test_every_table_line_loads_a_backend_of_its_name() -> None:
    assert [b.name for b in all_backends()] == list(RUNTIME_BACKENDS)
    assert all(isinstance(b, Backend) for b in all_backends())


def test_the_recipe_key_takes_the_tables_names() -> None:
    assert get_args(RuntimeBackend) == BACKENDS == tuple(sorted(RUNTIME_BACKENDS))


def test_an_unknown_name_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=f"expected one of {', '.join(BACKENDS)}, got 'lxc'"):
        backend("lxc")


def test_a_backends_images_engine_is_one_images_prepare_knows() -> None:
    assert {b.images_engine for b in all_backends()} <= {None, *ENGINES}
    assert backend("apptainer").images_engine == "apptainer" and backend("bwrap").images_engine is None
