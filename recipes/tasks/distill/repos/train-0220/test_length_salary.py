from length_salary import find_length, merge_salary


def test_find_length():
    assert find_length([26, 34, 11], 34) == 1
    assert find_length([44, 49, 40, 11, 16], 11) == 5


def test_merge_salary():
    assert merge_salary(56) == 30324
    assert merge_salary(47) == 21432
