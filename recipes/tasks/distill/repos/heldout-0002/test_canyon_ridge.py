from canyon_ridge import probe_canyon, probe_ridge


def test_probe_canyon():
    assert probe_canyon(15, 15) == 0
    assert probe_canyon(39, 6) == 33


def test_probe_ridge():
    assert probe_ridge(48, 9, 42) == 42
    assert probe_ridge(57, 27, 54) == 54
