from orbit_lumen import probe_lumen, rank_orbit


def test_rank_orbit():
    assert rank_orbit(36, 42) == 507
    assert rank_orbit(36, 45) == 504


def test_probe_lumen():
    assert probe_lumen(9, 12, 15) == 12
    assert probe_lumen(57, 15, 36) == 36
