from voltage import boost_voltage, sift_voltage


def test_sift_voltage():
    assert sift_voltage(30) == 13950
    assert sift_voltage(15) == 3600


def test_boost_voltage():
    assert boost_voltage(57) == 49590
    assert boost_voltage(12) == 2340
