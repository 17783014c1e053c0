from margin import count_margin, find_margin


def test_count_margin():
    assert count_margin(26) == 13338
    assert count_margin(25) == 12350


def test_find_margin():
    assert find_margin(26, 8, 20) == 20
    assert find_margin(34, 28, 47) == 34
