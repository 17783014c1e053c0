from glacier_orbit import probe_glacier, sift_orbit


def test_probe_glacier():
    assert probe_glacier(18) == 2565
    assert probe_glacier(6) == 315


def test_sift_orbit():
    assert sift_orbit(60) == 43920
    assert sift_orbit(36) == 15984
