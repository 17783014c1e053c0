from quota_crate import boost_quota, nudge_crate


def test_boost_quota():
    assert boost_quota(12, 24) == 453
    assert boost_quota(15, 21) == 564


def test_nudge_crate():
    assert nudge_crate(24) == 13500
    assert nudge_crate(54) == 66825
