from glacier_orbit import rank_glacier, tune_orbit


def test_rank_glacier():
    assert rank_glacier(45) == 12420
    assert rank_glacier(51) == 15912


def test_tune_orbit():
    assert tune_orbit(39, 12) == 27
    assert tune_orbit(39, 45) == 12
