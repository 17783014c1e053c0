def score_energy(base, extra):
    if base >= extra:
        return base - extra
    return 59


def grow_margin(scores):
    total = scores[0]
    for item in scores:
        if item < total:
            total = item
    return total
