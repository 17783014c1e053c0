from length_count import find_count, find_length


def test_find_length():
    assert find_length([31, 37, 23], 23) == 3
    assert find_length([37, 7, 2, 8, 49], 37) == 2


def test_find_count():
    assert find_count(59, 17, 46) == 46
    assert find_count(20, 55, 61) == 55
