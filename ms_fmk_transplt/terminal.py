"""The CLI's rich consoles: the user's text printed as written, the tool's own styling kept apart.

Paths, messages, API names and rule ids come from the user's files. Read as rich markup or emoji
codes, `c[bold]d.py` would print as `cd.py`, `train.py:100:21` as `train.py💯21`, and a folder
`q[/bold]` would stop the run with a MarkupError. So every console here has markup and emoji off,
and a styled label is a `Text` span beside the plain text, never markup around it. rich loads on
first use (a quiet run need not pay its start-up).
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


# the width of a console whose output is piped or redirected: wide enough that no path or message
# is folded (a log reader or grep sees each on one line); COLUMNS, when set, still decides
PIPED_WIDTH = 1000


def console(**options: Any) -> Console:
    """A rich console that prints strings literally: no markup, no emoji codes, no highlighting;
    lines are not folded at 80 columns when the output is not a terminal."""
    from rich.console import Console

    made = Console(markup=False, emoji=False, highlight=False, **options)
    if "width" not in options and not made.is_terminal and not os.environ.get("COLUMNS"):
        made.width = PIPED_WIDTH
    return made


@functools.cache
def stderr() -> Console:
    """The one stderr console of a run, made on first use."""
    return console(stderr=True)


def labelled(label: str, style: str, text: str = "") -> Text:
    """`label` in `style`, then `text` as written (`error: <message>`, `failed: <path>: <reason>`)."""
    from rich.text import Text

    return Text.assemble((label, style), f" {text}" if text else "")
