from orbit_canyon import nudge_orbit, sift_canyon


def test_nudge_orbit():
    assert nudge_orbit(39, 54) == 1980
    assert nudge_orbit(45, 42) == 2298


def test_sift_canyon():
    assert sift_canyon(42, 15) == 2535
    assert sift_canyon(51, 30) == 3090
