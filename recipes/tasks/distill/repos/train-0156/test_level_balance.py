from level_balance import bound_level, get_balance


def test_bound_level():
    assert bound_level(59) == 107970
    assert bound_level(22) == 15433


def test_get_balance():
    assert get_balance(10) == 2860
    assert get_balance(11) == 3432
