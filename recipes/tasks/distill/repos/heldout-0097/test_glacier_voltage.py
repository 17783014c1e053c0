from glacier_voltage import stack_glacier, tune_voltage


def test_stack_glacier():
    assert stack_glacier(24, 24) == 0
    assert stack_glacier(12, 33) == 48


def test_tune_voltage():
    assert tune_voltage(42, 21) == 21
    assert tune_voltage(33, 24) == 9
