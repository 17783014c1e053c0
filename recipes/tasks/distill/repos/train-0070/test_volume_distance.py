from volume_distance import adjust_distance, trim_volume


def test_trim_volume():
    assert trim_volume(53, 37) == 16
    assert trim_volume(50, 56) == 50


def test_adjust_distance():
    assert adjust_distance(61, 28) == 33
    assert adjust_distance(11, 5) == 6
