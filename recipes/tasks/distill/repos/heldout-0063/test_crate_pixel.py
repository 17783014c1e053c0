from crate_pixel import cap_pixel, sift_crate


def test_sift_crate():
    assert sift_crate([27, 12, 24, 45, 48], 45) == 2
    assert sift_crate([9, 48, 60, 27, 36], 48) == 2


def test_cap_pixel():
    assert cap_pixel(18, 54) == 21
    assert cap_pixel(12, 48) == 21
