"""The text of a generated ViewDF: ``CREATE VIEW name AS`` its clauses, each query indented, and its partition
length, ready for the statement parser."""

from __future__ import annotations


def viewdf_text(name: str, clauses: list[tuple[str, str]], partition_length: int, declared: str = "") -> str:
    """``CREATE VIEW name AS <CLAUSE> name[var] AS <query> ... [declared] PARTITION LENGTH n``; ``clauses`` are
    (``INITIALIZE name[i]``-style heads, queries), ``declared`` an UNCHANGED WHEN or EMPTY WHEN clause."""
    lines = [f"CREATE VIEW {name} AS"]
    for head, query in clauses:
        lines.append(f"{head} AS")
        lines.extend("  " + line for line in query.split("\n"))
    if declared:
        lines.append(declared)
    lines.append(f"PARTITION LENGTH {partition_length}")
    return "\n".join(lines)
