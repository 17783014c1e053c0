from quota_pixel import sift_pixel, sift_quota


def test_sift_quota():
    assert sift_quota(9, 39) == 54
    assert sift_quota(15, 9) == 6


def test_sift_pixel():
    assert sift_pixel([12, 12, 9]) == 12
    assert sift_pixel([33, 39, 3]) == 39
