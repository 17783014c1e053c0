from orbit_canyon import blend_orbit, probe_canyon


def test_blend_orbit():
    assert blend_orbit(36, 33) == 3
    assert blend_orbit(42, 27) == 15


def test_probe_canyon():
    assert probe_canyon(45, 3) == 42
    assert probe_canyon(48, 18) == 30
