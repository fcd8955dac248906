"""tuned's own INI files, read with the parser tuned itself uses.

tuned is Python and reads `tuned.conf` with `configparser.ConfigParser(delimiters=('='),
inline_comment_prefixes=('#'), strict=False)`, `optionxform = str` and values taken
`raw=True` (tuned/profiles/loader.py `_load_config_data()`); tuned-main.conf the same way
after a made-up section header (tuned/utils/global_config.py `load_config()`). Reading
them with that same parser is the surest way to see what tuned sees: `#` after a blank
starts an inline comment (`vm.dirty_bytes = 31457280   # 30 MiB` is 31457280), `a=b#c`
keeps `b#c`, a full line starting with `#` or `;` is a comment, an indented line
continues the value above, a repeated section or key merges and the later value wins.
"""

from __future__ import annotations

from ..errors import ParseError

TYPE_CHECKING = False  # configparser (~1.2 ms) loads with the first tuned file: docs/architecture.md#start-up-cost
if TYPE_CHECKING:
    import configparser

_HEADER = "this_is_some_magic_section_header_because_of_compatibility"  # tuned/consts.py MAGIC_HEADER_NAME


def _read(text: str, source: str, allow_no_value: bool = False) -> configparser.ConfigParser:
    """`text` read by tuned's parser (`allow_no_value`: as variables.py reads an included
    file); ParseError when configparser refuses it, as tuned then does."""
    import configparser

    parser = configparser.ConfigParser(delimiters=("=",), inline_comment_prefixes=("#",), strict=False,
                                       interpolation=None, allow_no_value=allow_no_value)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # tuned keeps key case
    try:
        parser.read_string(text, source)
    except configparser.Error as e:
        raise ParseError(source, f"tuned cannot parse it: {' '.join(str(e).split())[:160]}") from None
    return parser


def parse_tuned_conf(text: str, source: str) -> dict[str, dict[str, str]]:
    """A profile's sections in file order, each {option: value} in file order. A line
    before any section is an error, as it is to tuned (the profile then does not load)."""
    parser = _read(text, source)
    return {section: dict(parser.items(section, raw=True)) for section in parser.sections()}


def parse_tuned_main(text: str, source: str) -> dict[str, str]:
    """etc/tuned/tuned-main.conf: options without a section."""
    parser = _read(f"[{_HEADER}]\n" + text, source)
    return dict(parser.items(_HEADER, raw=True)) if parser.has_section(_HEADER) else {}


def parse_variables_file(text: str, source: str) -> list[tuple[str, str | None]]:
    """A variables file that a profile's `[variables]` includes (tuned/profiles/variables.py
    `add_from_file()`): options allowed without a value, after the made-up section header;
    (name, value or None) of every section's options, in order."""
    parser = _read(f"[{_HEADER}]\n" + text, source, allow_no_value=True)
    return [(name, parser.get(section, name, raw=True)) for section in parser.sections()
            for name in parser.options(section)]
