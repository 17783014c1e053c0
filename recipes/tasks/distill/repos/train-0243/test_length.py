from length import shift_length, trim_length


def test_trim_length():
    assert trim_length([44, 47, 2, 32], 32) == 3
    assert trim_length([8, 20, 58, 13], 58) == 1


def test_shift_length():
    assert shift_length([32, 4, 47, 4]) == 47
    assert shift_length([19, 29, 37, 44]) == 44
