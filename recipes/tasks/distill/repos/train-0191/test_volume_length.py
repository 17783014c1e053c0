from volume_length import adjust_volume, grow_length


def test_adjust_volume():
    assert adjust_volume(56, 47) == 3127
    assert adjust_volume(10, 7) == 557


def test_grow_length():
    assert grow_length([13, 59, 28, 31, 50]) == 59
    assert grow_length([2, 28, 58, 58]) == 58
