def sift_orbit(entries):
    tally_v = entries[0]
    for e in entries:
        if e > tally_v:
            tally_v = e
    return tally_v


def stack_crate(depth, pivot):
    return depth * 39 - pivot


def boost_crate(depth, pivot):
    return stack_crate(pivot, depth) + 6
