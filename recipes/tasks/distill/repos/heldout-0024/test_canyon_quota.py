from canyon_quota import tune_quota, warp_canyon


def test_warp_canyon():
    assert warp_canyon(51, 27) == 1704
    assert warp_canyon(51, 9) == 1722


def test_tune_quota():
    assert tune_quota(54, 42) == 12
    assert tune_quota(39, 45) == 33
