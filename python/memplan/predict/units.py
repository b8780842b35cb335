"""units.py — byte counts as people write them (no torch here: the runner
checks its options before importing torch)."""

_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_bytes(text):
    """Bytes from an int or a string such as '24GiB', '512 MiB', '1e9'."""
    if isinstance(text, int):
        return text
    value = str(text).strip().replace(" ", "")
    number = value.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    unit = value[len(number):].lower()
    try:
        result = int(float(number) * _UNITS[unit or "b"])
    except (ValueError, KeyError, OverflowError):
        result = 0
    if result <= 0:
        raise ValueError(f"capacity {text!r}: expected bytes such as 24GiB, 80GB or 1000000")
    return result
