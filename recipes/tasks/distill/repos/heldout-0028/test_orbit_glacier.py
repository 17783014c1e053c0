from orbit_glacier import boost_orbit, tune_glacier


def test_boost_orbit():
    assert boost_orbit(18, 24) == 552
    assert boost_orbit(39, 48) == 1158


def test_tune_glacier():
    assert tune_glacier(45, 3, 33) == 33
    assert tune_glacier(48, 9, 18) == 18
