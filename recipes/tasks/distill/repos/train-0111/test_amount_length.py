from amount_length import bound_length, total_amount


def test_total_amount():
    assert total_amount(10, 56) == 426
    assert total_amount(55, 56) == 2091


def test_bound_length():
    assert bound_length(61) == 32147
    assert bound_length(19) == 3230
