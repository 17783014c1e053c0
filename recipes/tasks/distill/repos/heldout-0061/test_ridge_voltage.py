from ridge_voltage import sift_ridge, sift_voltage


def test_sift_ridge():
    assert sift_ridge(30, 57) == 21
    assert sift_ridge(39, 27) == 12


def test_sift_voltage():
    assert sift_voltage(27, 24) == 3
    assert sift_voltage(15, 18) == 48
