"""Handlers of the statements that drive maintenance: SET MAINTENANCE, STEP."""

from __future__ import annotations



from ..wording import plural
from ..language import statements as st

from ..engine.engine import Engine
from ..engine.results import Result, timed


def set_maintenance(engine: Engine, statement: st.SetMaintenance) -> Result:
    steps, seconds = timed(lambda: engine.set_maintenance(statement.mode))
    message = f"Maintenance is {statement.mode}."
    if steps:
        message += f" Computed {plural(len(steps), 'pending view part')}."
    return Result(statement, message + engine.maintenance_note(), steps=steps, maintenance_seconds=seconds)


def step(engine: Engine, statement: st.Step) -> Result:
    if statement.view is not None:
        definition = engine.require(statement.view.text, ("view",), statement, statement.view)
        if engine.maintainer.next_step(definition) is None:
            raise statement.fragment.error(engine.not_ready(definition), statement.view.start, statement.view.end)
    steps, seconds = timed(lambda: engine.step(statement.view.text if statement.view else None, statement.count,
                                               statement.plan))
    message = f"Computed {plural(len(steps), 'view part')}." if steps else "Nothing is ready to compute."
    return Result(statement, message, steps=steps, maintenance_seconds=seconds)

