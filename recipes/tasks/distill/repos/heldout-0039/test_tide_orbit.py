from tide_orbit import probe_tide, stack_orbit


def test_probe_tide():
    assert probe_tide(39, 27) == 1548
    assert probe_tide(42, 42) == 1680


def test_stack_orbit():
    assert stack_orbit(18, 48) == 372
    assert stack_orbit(48, 6) == 870
