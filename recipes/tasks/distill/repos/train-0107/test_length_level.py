from length_level import total_length, total_level


def test_total_length():
    assert total_length(46, 46) == 0
    assert total_length(50, 23) == 27


def test_total_level():
    assert total_level(47, 32) == 220
    assert total_level(44, 7) == 183
