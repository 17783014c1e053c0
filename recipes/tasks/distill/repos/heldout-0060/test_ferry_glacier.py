from ferry_glacier import boost_ferry, tune_glacier


def test_boost_ferry():
    assert boost_ferry(60, 12, 48) == 48
    assert boost_ferry(48, 21, 45) == 45


def test_tune_glacier():
    assert tune_glacier([3, 18, 57, 33, 3]) == 57
    assert tune_glacier([45, 36, 42, 12]) == 45
