from orbit_voltage import cap_orbit, probe_voltage


def test_cap_orbit():
    assert cap_orbit(15, 21) == 615
    assert cap_orbit(9, 57) == 327


def test_probe_voltage():
    assert probe_voltage(48) == 31752
    assert probe_voltage(51) == 35802
