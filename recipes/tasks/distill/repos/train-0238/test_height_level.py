from height_level import bound_height, count_level


def test_bound_height():
    assert bound_height(32, 20) == 995
    assert bound_height(22, 23) == 682


def test_count_level():
    assert count_level(47) == 36096
    assert count_level(11) == 2112
