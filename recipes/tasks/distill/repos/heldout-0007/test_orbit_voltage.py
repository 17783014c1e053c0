from orbit_voltage import nudge_orbit, nudge_voltage


def test_nudge_orbit():
    assert nudge_orbit(21) == 6237
    assert nudge_orbit(42) == 24381


def test_nudge_voltage():
    assert nudge_voltage(18) == 8208
    assert nudge_voltage(60) == 87840
