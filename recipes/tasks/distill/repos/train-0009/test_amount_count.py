from amount_count import mix_count, pick_amount


def test_pick_amount():
    assert pick_amount(35, 10) == 1865
    assert pick_amount(16, 34) == 882


def test_mix_count():
    assert mix_count(22, 40) == 59
    assert mix_count(28, 55) == 59
