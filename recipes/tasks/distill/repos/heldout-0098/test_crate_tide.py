from crate_tide import cap_crate, probe_tide


def test_cap_crate():
    assert cap_crate(12, 39) == 261
    assert cap_crate(36, 18) == 786


def test_probe_tide():
    assert probe_tide(15, 48) == 903
    assert probe_tide(57, 60) == 3309
