from rating_budget import bound_rating, total_budget


def test_bound_rating():
    assert bound_rating(17, 16) == 543
    assert bound_rating(5, 37) == 192


def test_total_budget():
    assert total_budget(28, 53) == 37
    assert total_budget(46, 58) == 37
