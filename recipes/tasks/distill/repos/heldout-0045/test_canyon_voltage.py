from canyon_voltage import blend_voltage, gauge_canyon


def test_gauge_canyon():
    assert gauge_canyon(60, 24) == 36
    assert gauge_canyon(36, 51) == 6


def test_blend_voltage():
    assert blend_voltage([30, 24, 36, 36, 45]) == 45
    assert blend_voltage([60, 9, 60, 60, 9]) == 60
