from glacier_pixel import gauge_glacier, probe_pixel


def test_gauge_glacier():
    assert gauge_glacier(36) == 33966
    assert gauge_glacier(30) == 23715


def test_probe_pixel():
    assert probe_pixel(18) == 9747
    assert probe_pixel(42) == 51471
