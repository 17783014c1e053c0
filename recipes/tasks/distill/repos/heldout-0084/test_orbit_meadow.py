from orbit_meadow import gauge_orbit, sift_meadow


def test_gauge_orbit():
    assert gauge_orbit([48, 39, 6, 48, 12]) == 48
    assert gauge_orbit([36, 12, 30, 30]) == 36


def test_sift_meadow():
    assert sift_meadow([33, 6, 21]) == 33
    assert sift_meadow([42, 9, 57, 18]) == 57
