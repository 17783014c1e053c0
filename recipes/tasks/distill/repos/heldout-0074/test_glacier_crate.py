from glacier_crate import boost_glacier, sift_crate


def test_boost_glacier():
    assert boost_glacier(24, 3) == 483
    assert boost_glacier(21, 15) == 417


def test_sift_crate():
    assert sift_crate(3, 12) == 51
    assert sift_crate(57, 48) == 9
