from quota_glacier import blend_quota, rank_glacier


def test_blend_quota():
    assert blend_quota(15, 24) == 117
    assert blend_quota(21, 33) == 144


def test_rank_glacier():
    assert rank_glacier([3, 30, 12, 33]) == 33
    assert rank_glacier([33, 24, 57, 27, 51]) == 57
