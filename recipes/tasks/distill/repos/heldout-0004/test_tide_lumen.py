from tide_lumen import blend_tide, stack_lumen


def test_blend_tide():
    assert blend_tide(12) == 234
    assert blend_tide(48) == 3528


def test_stack_lumen():
    assert stack_lumen(45, 54) == 1674
    assert stack_lumen(3, 48) == 156
