from ferry_orbit import cap_orbit, gauge_ferry


def test_gauge_ferry():
    assert gauge_ferry(39, 36) == 1440
    assert gauge_ferry(60, 42) == 2202


def test_cap_orbit():
    assert cap_orbit(33, 33) == 1221
    assert cap_orbit(51, 18) == 1854
