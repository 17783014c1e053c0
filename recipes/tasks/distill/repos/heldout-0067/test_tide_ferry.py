from tide_ferry import cap_ferry, warp_tide


def test_warp_tide():
    assert warp_tide(9, 9) == 0
    assert warp_tide(57, 6) == 51


def test_cap_ferry():
    assert cap_ferry(57, 9) == 1548
    assert cap_ferry(24, 30) == 678
