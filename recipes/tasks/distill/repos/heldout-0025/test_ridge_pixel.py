from ridge_pixel import stack_pixel, tally_ridge


def test_tally_ridge():
    assert tally_ridge(51, 42) == 9
    assert tally_ridge(6, 30) == 45


def test_stack_pixel():
    assert stack_pixel(54, 9) == 981
    assert stack_pixel(54, 57) == 1029
