from quota_canyon import cap_quota, probe_canyon


def test_cap_quota():
    assert cap_quota([48, 3, 57, 9], 3) == 4
    assert cap_quota([27, 12, 36, 30, 9], 36) == 1


def test_probe_canyon():
    assert probe_canyon(57, 15) == 2580
    assert probe_canyon(18, 60) == 870
