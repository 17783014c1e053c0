from canyon_orbit import probe_canyon, stack_orbit


def test_probe_canyon():
    assert probe_canyon(33, 21) == 912
    assert probe_canyon(57, 45) == 1584


def test_stack_orbit():
    assert stack_orbit(39, 21) == 18
    assert stack_orbit(36, 51) == 6
