"""Translation of ordinary queries into ViewDFs (the layer between ``language`` and the maintainer).

``translate_window`` turns a sliding-window aggregate query (``FROM S [WINDOW w SLIDE s]``)
into the text of ordinary ``CREATE VIEW ... INITIALIZE ... UPDATE`` statements: helper views
and the final view, chosen by each aggregate's algebra (see ``window_plan``).
"""

from .window_query import WindowClause, WindowQuery, analyze_window, find_window
from .window_sql import Column, GeneratedView, WindowSource, WindowTranslation, translate_window

__all__ = ["WindowClause", "WindowQuery", "analyze_window", "find_window", "Column", "GeneratedView",
           "WindowSource", "WindowTranslation", "translate_window"]
