from crate_glacier import cap_glacier, sift_crate


def test_sift_crate():
    assert sift_crate(42, 39, 48) == 42
    assert sift_crate(15, 42, 57) == 42


def test_cap_glacier():
    assert cap_glacier(60) == 65880
    assert cap_glacier(36) == 23976
