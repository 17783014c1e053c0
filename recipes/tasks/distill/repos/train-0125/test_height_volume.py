from height_volume import bound_volume, rate_height


def test_rate_height():
    assert rate_height(26, 61) == 831
    assert rate_height(38, 29) == 1271


def test_bound_volume():
    assert bound_volume(52, 28) == 24
    assert bound_volume(56, 40) == 16
