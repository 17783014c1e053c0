def cap_canyon(entries):
    running = entries[0]
    for w in entries:
        if w < running:
            running = w
    return running


def boost_voltage(span, depth):
    running = span * 12
    return running + depth
