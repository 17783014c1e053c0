def reverse_words(text):
    return text[::-1]
