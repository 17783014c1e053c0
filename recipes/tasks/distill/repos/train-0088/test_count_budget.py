from count_budget import get_budget, trim_count


def test_trim_count():
    assert trim_count([26, 55, 10, 38], 26) == 3
    assert trim_count([19, 17, 53, 46], 53) == 1


def test_get_budget():
    assert get_budget(43, 35) == 1153
    assert get_budget(25, 41) == 691
