from weight_volume import adjust_volume, adjust_weight


def test_adjust_weight():
    assert adjust_weight([32, 23, 11, 7], 7) == 4
    assert adjust_weight([56, 61, 10, 5, 50], 50) == 3


def test_adjust_volume():
    assert adjust_volume(37) == 1406
    assert adjust_volume(11) == 132
