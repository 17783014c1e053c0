from ferry_orbit import gauge_orbit, sift_ferry


def test_sift_ferry():
    assert sift_ferry(39) == 7020
    assert sift_ferry(6) == 189


def test_gauge_orbit():
    assert gauge_orbit(42, 42) == 1302
    assert gauge_orbit(33, 51) == 1041
