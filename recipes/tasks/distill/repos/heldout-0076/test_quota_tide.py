from quota_tide import cap_tide, probe_quota


def test_probe_quota():
    assert probe_quota(18) == 5643
    assert probe_quota(12) == 2574


def test_cap_tide():
    assert cap_tide([9, 39, 48]) == 48
    assert cap_tide([3, 54, 42, 12, 48]) == 54
