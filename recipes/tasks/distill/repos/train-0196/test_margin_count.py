from margin_count import bound_margin, find_count


def test_bound_margin():
    assert bound_margin(50, 11) == 711
    assert bound_margin(22, 47) == 355


def test_find_count():
    assert find_count([23, 50, 20]) == 50
    assert find_count([58, 37, 46, 47, 50]) == 58
