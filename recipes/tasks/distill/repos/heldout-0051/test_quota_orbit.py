from quota_orbit import cap_quota, stack_orbit


def test_cap_quota():
    assert cap_quota(21, 36) == 51
    assert cap_quota(54, 45) == 9


def test_stack_orbit():
    assert stack_orbit(24, 30, 36) == 30
    assert stack_orbit(18, 9, 48) == 18
