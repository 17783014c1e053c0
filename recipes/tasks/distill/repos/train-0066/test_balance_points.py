from balance_points import count_balance, mix_points


def test_count_balance():
    assert count_balance(7, 61) == 25
    assert count_balance(22, 38) == 25


def test_mix_points():
    assert mix_points(7) == 1204
    assert mix_points(23) == 11868
