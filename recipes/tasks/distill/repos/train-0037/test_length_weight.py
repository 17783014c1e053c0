from length_weight import adjust_weight, limit_length


def test_limit_length():
    assert limit_length(13, 13) == 0
    assert limit_length(52, 43) == 9


def test_adjust_weight():
    assert adjust_weight([59, 10, 61]) == 61
    assert adjust_weight([23, 55, 10]) == 55
