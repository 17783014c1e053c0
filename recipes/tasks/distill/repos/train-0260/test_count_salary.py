from count_salary import find_count, grow_salary


def test_find_count():
    assert find_count(46, 7, 11) == 11
    assert find_count(19, 44, 58) == 44


def test_grow_salary():
    assert grow_salary(28, 4, 53) == 28
    assert grow_salary(38, 17, 59) == 38
