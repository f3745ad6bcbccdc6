"""Search everything a run left behind for known secrets: texts, files, databases, event logs.

Shared by the secret-scan tests of every coordination style::

    scan = SecretScan({"api key": KEY, "db password": PW})
    scan.text("run --json stdout", proc.stdout)
    scan.tree(tmp_path)               # every file, raw bytes: outputs, SQLite (+ WAL), logs
    scan.postgres(url)                # every row of every table, bytea as raw bytes
    scan.assert_clean()

A hit names the secret and where it was found, never the secret itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SecretScan:
    """Known secrets, and every place one of them was found."""

    secrets: dict[str, str]
    """What each secret is (for the report) -> its value."""
    hits: list[str] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)
    """Every place searched, so a test can check the scan covered what it meant to."""

    def __post_init__(self) -> None:
        for name, value in self.secrets.items():
            assert len(value) >= 8, f"{name}: too short to search for without false hits"

    def data(self, where: str, data: bytes) -> None:
        """Search raw bytes (a file, a blob, a log)."""
        self.searched.append(where)
        for name, value in self.secrets.items():
            count = data.count(value.encode())
            if count:
                self.hits.append(f"{name}: {count} time(s) in {where}")

    def text(self, where: str, text: str) -> None:
        """Search a text (stdout, stderr, a JSON document, a log line)."""
        self.data(where, text.encode())

    def tree(self, root: Path) -> None:
        """Search every file under ``root``, hidden ones included (ledgers, WAL files)."""
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                self.data(str(path), path.read_bytes())

    def postgres(self, url: str) -> None:
        """Search every row of every table in the database's public schema."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                ).fetchall()
            ]
            for table in tables:
                chunks: list[bytes] = []
                for row in conn.execute(f'SELECT * FROM "{table}"').fetchall():
                    for value in row:
                        if isinstance(value, bytes | memoryview):
                            chunks.append(bytes(value))
                        elif value is not None:
                            chunks.append(str(value).encode())
                self.data(f"postgres table {table}", b"\n".join(chunks))

    def assert_clean(self) -> None:
        assert self.hits == [], "secrets leaked:\n" + "\n".join(self.hits)
