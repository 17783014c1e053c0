from weight_count import limit_count, pick_weight


def test_pick_weight():
    assert pick_weight(8) == 1368
    assert pick_weight(20) == 7980


def test_limit_count():
    assert limit_count(11, 31) == 405
    assert limit_count(40, 53) == 1413
