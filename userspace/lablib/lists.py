"""Lists of whole numbers on command lines: "0,50,100", "0:700:50" (start,
stop and step, stop included) and mixtures such as "0:200:50,400"; the
syntax of the C tools' lab_parse_uint_list."""

ULONG_MAX = 2 ** 64 - 1
MAX_ITEMS = 2 ** 31 - 1
EXAMPLE = "want e.g. 0,50,100 or 0:700:50"


def _number(text, item, whole):
    if not text.isdigit() or not text.isascii():
        what = "an empty item" if text == "" else f"{text!r} is not a whole number >= 0"
        raise ValueError(f"bad list {whole!r}: {what} ({EXAMPLE})")
    value = int(text)
    if value > ULONG_MAX:
        raise ValueError(f"bad list {whole!r}: {text} is too large")
    return value


def parse_list(text):
    """The numbers of @text in order, ranges expanded.  ValueError, with the
    list and what is wrong with it, for anything else (empty items, signs,
    spaces, a range without a step, a step of 0, a stop below its start)."""
    if not isinstance(text, str) or text == "":
        raise ValueError(f"bad list {text!r}: empty ({EXAMPLE})")
    out = []
    for item in text.split(","):
        parts = item.split(":")
        if len(parts) == 1:
            out.append(_number(item, item, text))
            continue
        if len(parts) != 3:
            raise ValueError(f"bad list {text!r}: {item!r} is not START:STOP:STEP ({EXAMPLE})")
        start, stop, step = (_number(p, item, text) for p in parts)
        if step == 0:
            raise ValueError(f"bad list {text!r}: {item!r} has a step of 0")
        if stop < start:
            raise ValueError(f"bad list {text!r}: {item!r} stops below its start")
        if len(out) + (stop - start) // step + 1 > MAX_ITEMS:
            raise ValueError(f"bad list {text!r}: more than {MAX_ITEMS} numbers")
        out.extend(range(start, stop + 1, step))
    return out
