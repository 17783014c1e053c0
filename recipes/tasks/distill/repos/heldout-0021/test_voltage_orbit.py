from voltage_orbit import blend_voltage, warp_orbit


def test_blend_voltage():
    assert blend_voltage(27, 36) == 846
    assert blend_voltage(48, 39) == 1479


def test_warp_orbit():
    assert warp_orbit(3, 33) == 96
    assert warp_orbit(21, 27) == 468
