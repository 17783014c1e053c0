from quota_orbit import probe_quota, stack_orbit


def test_probe_quota():
    assert probe_quota(42, 60) == 12
    assert probe_quota(57, 33) == 24


def test_stack_orbit():
    assert stack_orbit([45, 15, 15]) == 45
    assert stack_orbit([18, 36, 12, 45]) == 45
