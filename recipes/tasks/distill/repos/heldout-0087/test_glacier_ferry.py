from glacier_ferry import cap_glacier, rank_ferry


def test_cap_glacier():
    assert cap_glacier([24, 45, 57], 24) == 3
    assert cap_glacier([18, 18, 30, 45, 54], 54) == 1


def test_rank_ferry():
    assert rank_ferry(42, 21, 33) == 33
    assert rank_ferry(21, 33, 51) == 33
