def boost_canyon(depth, bias):
    running = depth + 36
    return running + bias


def probe_ridge(samples):
    tally_v = samples[0]
    for w in samples:
        if w > tally_v:
            tally_v = w
    return tally_v
