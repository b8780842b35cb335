"""units.py — byte counts as people write them (no torch here: the runner
checks its options before importing torch)."""


def parse_bytes(text):
    """Bytes from an int or a string with a unit, read by the library's parser
    as the CLI reads them ('24GiB', '80GB', '1000000', '1.5K'); a positive
    count, else ValueError."""
    from .._memplan import InputError, _parse_bytes  # the C++ module: no torch

    try:
        result = _parse_bytes(text, "capacity")
    except InputError:
        result = 0
    if result <= 0:
        raise ValueError(f"capacity {text!r}: expected bytes such as 24GiB, 80GB or 1000000")
    return result
