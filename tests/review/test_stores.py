"""open_store: a review store from the URL in ``review.store``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.review.postgres import PostgresStore
from gateway.review.sqlite import SQLiteStore
from gateway.review.stores import open_store
from tests.review.store_helpers import make_review


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///var/reviews.sqlite3", Path("var/reviews.sqlite3")),
        ("sqlite:///reviews.sqlite3", Path("reviews.sqlite3")),
        ("sqlite:////srv/reefgate/reviews.sqlite3", Path("/srv/reefgate/reviews.sqlite3")),
    ],
)
def test_sqlite_urls(url: str, path: Path) -> None:
    store = open_store(url)
    assert isinstance(store, SQLiteStore)
    assert store.path == path
    assert store.path.is_absolute() == url.startswith("sqlite:////")


@pytest.mark.parametrize(
    "url", ["postgresql://postgres@127.0.0.1:5432/test", "postgres://u:p@db.internal/reviews"]
)
def test_postgres_urls(url: str) -> None:
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    assert store.schema == "reefgate"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "sqlite:///",
        "sqlite://reviews.sqlite3",
        "sqlite:///var/",
        "mysql://u:secret@db/reviews",
        "postgresql:/x",
        "/var/reviews.sqlite3",
    ],
)
def test_other_urls_are_refused_without_echoing_them(url: str) -> None:
    with pytest.raises(
        ValueError, match=r"must be sqlite:///<path> or postgresql://|file path"
    ) as e:
        open_store(url)
    assert "secret" not in str(e.value)


async def test_the_opened_store_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A relative path is relative to the working directory; missing directories are made.
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///var/reviews.sqlite3")
    await store.open()
    try:
        review = await store.submit(make_review())
        assert await store.get(review.id) == review
    finally:
        await store.close()
    assert (tmp_path / "var" / "reviews.sqlite3").is_file()


async def test_a_schema_in_the_postgres_url_holds_the_tables() -> None:
    import os

    import asyncpg  # type: ignore[import-untyped]

    schema = f"rg_url_{os.getpid()}_{os.urandom(3).hex()}"
    store = open_store(
        f"postgresql://postgres@127.0.0.1:5432/test?application_name=reefgate&schema={schema}"
    )
    assert isinstance(store, PostgresStore)
    assert store.schema == schema
    await store.open()
    try:
        stored = await store.submit(make_review())
        assert await store.get(stored.id) == stored
    finally:
        await store.close()
    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/test")
    try:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema
        )
        assert [t["table_name"] for t in tables] == ["reviews"]
    finally:
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await conn.close()
