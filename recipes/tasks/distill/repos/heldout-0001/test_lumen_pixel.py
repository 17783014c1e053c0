from lumen_pixel import nudge_pixel, sift_lumen


def test_sift_lumen():
    assert sift_lumen(30) == 13950
    assert sift_lumen(48) == 35280


def test_nudge_pixel():
    assert nudge_pixel(60) == 98820
    assert nudge_pixel(12) == 4212
