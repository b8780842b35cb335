"""A program for the mark and trace tests: marks N iterations with
memplan.mark() / memplan.mark_key(), each allocating the same three buffers
(1 MiB, 512 KiB, 768 KiB: Python's bytearrays come from malloc), and prints
which memplan library mark() called.

    python3 marking_program.py N
"""
import sys

import memplan


def main():
    iterations = int(sys.argv[1])
    print(f"loaded {memplan.loaded()}", flush=True)
    for i in range(iterations):
        if i % 2:
            memplan.mark_key(7)
        else:
            memplan.mark()
        a = bytearray(1 << 20)
        b = bytearray(1 << 19)
        del a
        c = bytearray(3 << 18)
        del b, c
    if iterations:
        memplan.mark()  # closes the last iteration


if __name__ == "__main__":
    main()
