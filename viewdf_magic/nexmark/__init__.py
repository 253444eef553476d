"""The Nexmark benchmark's data: a deterministic generator of its person, auction and bid streams."""

from .generator import (NexmarkConfig, NexmarkEvents, generate, generate_chunks, stream_statements,
                        write_parquet)

__all__ = ["NexmarkConfig", "NexmarkEvents", "generate", "generate_chunks", "stream_statements", "write_parquet"]
