from tide_orbit import cap_tide, nudge_orbit


def test_cap_tide():
    assert cap_tide(15, 60) == 3
    assert cap_tide(36, 51) == 3


def test_nudge_orbit():
    assert nudge_orbit([6, 48, 15, 54, 27]) == 54
    assert nudge_orbit([3, 51, 3]) == 51
