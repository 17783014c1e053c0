from voltage_crate import blend_voltage, stack_crate


def test_blend_voltage():
    assert blend_voltage(42, 45) == 1809
    assert blend_voltage(51, 36) == 2178


def test_stack_crate():
    assert stack_crate(3, 9) == 33
    assert stack_crate(36, 6) == 30
