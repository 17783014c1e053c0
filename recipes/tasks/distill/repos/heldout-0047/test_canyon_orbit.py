from canyon_orbit import stack_orbit, tune_canyon


def test_tune_canyon():
    assert tune_canyon([39, 27, 15], 15) == 3
    assert tune_canyon([12, 9, 57, 6], 9) == 3


def test_stack_orbit():
    assert stack_orbit(45, 48) == 1938
    assert stack_orbit(27, 15) == 1149
