from voltage_pixel import cap_voltage, nudge_pixel


def test_cap_voltage():
    assert cap_voltage([45, 27, 9]) == 45
    assert cap_voltage([60, 39, 9]) == 60


def test_nudge_pixel():
    assert nudge_pixel(51, 42) == 348
    assert nudge_pixel(36, 57) == 273
