from glacier import blend_glacier, nudge_glacier


def test_nudge_glacier():
    assert nudge_glacier([6, 6, 51], 51) == 1
    assert nudge_glacier([21, 24, 21, 30, 18], 18) == 5


def test_blend_glacier():
    assert blend_glacier([51, 3, 45, 6]) == 51
    assert blend_glacier([18, 27, 33]) == 33
