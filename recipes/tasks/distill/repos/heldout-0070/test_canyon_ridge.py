from canyon_ridge import boost_canyon, probe_ridge


def test_boost_canyon():
    assert boost_canyon(3, 57) == 165
    assert boost_canyon(48, 6) == 1734


def test_probe_ridge():
    assert probe_ridge([48, 30, 33]) == 48
    assert probe_ridge([48, 18, 57, 18]) == 57
