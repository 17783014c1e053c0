from count_level import find_level, scale_count


def test_scale_count():
    assert scale_count([43, 5, 16, 50, 13], 13) == 4
    assert scale_count([20, 50, 28], 50) == 1


def test_find_level():
    assert find_level(31, 46, 59) == 46
    assert find_level(49, 22, 26) == 26
