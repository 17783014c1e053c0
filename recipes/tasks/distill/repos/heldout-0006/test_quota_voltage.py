from quota_voltage import rank_quota, rank_voltage


def test_rank_quota():
    assert rank_quota(36) == 11988
    assert rank_quota(54) == 26730


def test_rank_voltage():
    assert rank_voltage(12, 3, 30) == 12
    assert rank_voltage(24, 30, 42) == 30
