from volume_width import count_volume, limit_width


def test_count_volume():
    assert count_volume(8, 8) == 0
    assert count_volume(29, 26) == 3


def test_limit_width():
    assert limit_width(29, 44) == 1378
    assert limit_width(41, 52) == 1938
