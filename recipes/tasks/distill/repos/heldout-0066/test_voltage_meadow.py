from voltage_meadow import boost_voltage, stack_meadow


def test_boost_voltage():
    assert boost_voltage(3) == 180
    assert boost_voltage(9) == 1350


def test_stack_meadow():
    assert stack_meadow(27) == 6804
    assert stack_meadow(33) == 10098
