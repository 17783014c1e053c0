from count_height import count_count, get_height


def test_count_count():
    assert count_count(44, 10, 59) == 44
    assert count_count(46, 17, 32) == 32


def test_get_height():
    assert get_height(29, 32, 40) == 32
    assert get_height(31, 2, 38) == 31
