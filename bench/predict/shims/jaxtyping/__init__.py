"""A stand-in for jaxtyping's dtype annotations (Float[Tensor, "b d"], ...),
written for memplan's accuracy harness: the benchmarked programs use them
only as annotations, so each subscript returns the array type unchanged."""


class _Annotation:
    def __class_getitem__(cls, item):
        return item[0] if isinstance(item, tuple) else item


def __getattr__(name):
    return _Annotation
