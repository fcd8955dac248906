"""argparse classes that ask for the terminal width only when help is printed.

argparse builds a formatter for every `add_argument` (to check the metavar), and
HelpFormatter.__init__ imports shutil for the terminal width: shutil with bz2, lzma and
fnmatch is ~2 ms of every command's start-up (docs/architecture.md#start-up-cost), spent on a width nobody reads
unless help or a usage error is printed. These formatters take the same width, from the
same call, the first time it is read, so help looks exactly as before.
"""

from __future__ import annotations

import argparse


class _LazyWidth(argparse.HelpFormatter):
    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        self._asked = (max_help_position, width)
        self._sizes = None
        super().__init__(prog, indent_increment, max_help_position, width=80)  # placeholder: the setters drop it

    def _resolve(self) -> tuple[int, int]:
        if self._sizes is None:
            max_help_position, width = self._asked
            if width is None:  # as argparse.HelpFormatter.__init__ does
                import shutil
                width = shutil.get_terminal_size().columns - 2
            self._sizes = (min(max_help_position, max(width - 20, self._indent_increment * 2)), width)
        return self._sizes

    _max_help_position = property(lambda self: self._resolve()[0], lambda self, value: None)
    _width = property(lambda self: self._resolve()[1], lambda self, value: None)


class HelpFormatter(_LazyWidth, argparse.HelpFormatter):
    pass


class RawDescriptionHelpFormatter(_LazyWidth, argparse.RawDescriptionHelpFormatter):
    pass


class ArgumentParser(argparse.ArgumentParser):
    """Subparsers are of the parser's class: each gets the lazy formatter by default."""

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs):
        if formatter_class is argparse.HelpFormatter:
            formatter_class = HelpFormatter
        elif formatter_class is argparse.RawDescriptionHelpFormatter:
            formatter_class = RawDescriptionHelpFormatter
        super().__init__(*args, formatter_class=formatter_class, **kwargs)  # type: ignore[misc]  # by keyword only
