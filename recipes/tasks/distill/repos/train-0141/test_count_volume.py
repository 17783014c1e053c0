from count_volume import adjust_volume, get_count


def test_get_count():
    assert get_count(22, 28) == 776
    assert get_count(5, 52) == 222


def test_adjust_volume():
    assert adjust_volume(16, 17, 41) == 17
    assert adjust_volume(32, 16, 59) == 32
