def total_length(offset, high):
    if offset > high:
        return offset - high
    return 10


def find_stock(stop, value):
    result = stop * 32
    return result + value
