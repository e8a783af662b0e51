"""The Dataset's catalog and whole-file methods: sql() with typed values,
sql_update(), sql_user(), check(), stats(), pagedb.status(), vacuum() (in
place and into a new dataset; refused while views of the map are alive) and
attach() -- each failure an exception carrying pagedb's code."""
import os

import pytest

import pagedb
from conftest import make, sample


def test_sql_values_are_typed(path):
    ds = make(path, 12)
    rows = ds.sql("SELECT 7, -2.5, 'text', x'00ff10', NULL, '12', 1e300")
    assert rows == [(7, -2.5, "text", b"\x00\xff\x10", None, "12", 1e300)]
    assert [type(v) for v in rows[0]] == [int, float, str, bytes, type(None), str, float]
    # The text "NULL" and a number-like string stay str; big integers stay exact.
    assert ds.sql("SELECT 'NULL', '3.0', 9223372036854775807") == [("NULL", "3.0", 9223372036854775807)]
    rows = ds.sql("SELECT id, label, score FROM sample WHERE id < 3 ORDER BY id")
    assert rows == [(i, sample(i)["label"], sample(i)["score"]) for i in range(3)]
    assert ds.sql("SELECT 'é✓'") == [("é✓",)]
    assert ds.sql("SELECT 1 WHERE 0") == []
    ds.close()


def test_sql_update_and_user_tables(path):
    ds = make(path, 10)
    with pytest.raises(pagedb.ReadOnlyError):
        ds.sql_update("DELETE FROM sample")
    with pytest.raises(pagedb.MismatchError):
        ds.sql_update("UPDATE sample SET label = 'seven' WHERE id = 1")
    assert ds.sql_update("UPDATE sample SET label = 100 + label WHERE id < 4") == 4
    assert [ds[i]["label"] for i in range(5)] == [100, 101, 102, 103, 4]   # reads see it at once
    it = ds.iterate([0, 1])
    with pytest.raises(pagedb.MisuseError) as e:                          # an iterator's reader is open
        ds.sql_update("UPDATE sample SET label = 0")
    assert e.value.code == pagedb.MISUSE
    it.close()
    assert ds.sql_user("CREATE TABLE classes(label INTEGER PRIMARY KEY, name TEXT)") == 0
    assert ds.sql_user("INSERT INTO classes VALUES (100, 'cat'), (101, 'dog')") == 2
    assert ds.sql("SELECT s.id, c.name FROM sample s JOIN classes c ON c.label = s.label ORDER BY s.id") == \
        [(0, "cat"), (1, "dog")]
    with pytest.raises(pagedb.ReadOnlyError):
        ds.sql_user("DROP TABLE sample")
    ds.close()
    ro = pagedb.open(path)
    with pytest.raises(pagedb.ReadOnlyError):
        ro.sql_update("UPDATE sample SET label = 1")
    assert ro[2]["label"] == 102                                            # durable
    ro.close()


def test_check_stats_status(path):
    ds = make(path, 30)
    assert ds.check() == [] and ds.check(quick=True) == []
    st = ds.stats()
    assert st["samples"] == 30
    assert st["bytes_stored"] + st["bytes_dead"] + st["bytes_header"] + st["bytes_padding"] + st["bytes_waste"] == \
        st["pages"] * ds.page_size
    assert len(st["fill_hist"]) == 10 and sum(st["fill_hist"]) == st["runs"]
    assert st["fields"]["label"]["values"] == 30
    assert st["fields"]["caption"]["bytes_raw"] == sum(len(sample(i)["caption"]) for i in range(30))
    status = pagedb.status()
    assert status["memory_used"][0] > 0 and status["memory_used"][1] >= status["memory_used"][0]
    ds.close()
    # A damaged value: check() lists it (it is the answer, not an exception).
    ds = pagedb.open(path, "w")
    off = None
    v = ds.view(3, "image")
    data = bytes(v)
    del v
    ds.close()
    with open(path, "r+b") as f:
        whole = f.read()
        off = whole.find(data)
        assert off > 0
        f.seek(off + len(data) // 2)
        f.write(bytes([whole[off + len(data) // 2] ^ 0xFF]))
    ds = pagedb.open(path)
    problems = ds.check()
    assert problems and all(len(p) == 4 and isinstance(p[3], str) for p in problems)
    assert any(p[1] == 3 for p in problems)
    assert ds.check(quick=True) == [] or all(p[1] != 3 for p in ds.check(quick=True))
    ds.close()


def test_vacuum(path, tmp_path):
    ds = make(path, 40)
    for i in range(0, 40, 2):
        ds.delete(i)
    ds.commit()
    assert ds.stats()["bytes_dead"] > 0
    into = str(tmp_path / "into.pagedb")
    ds.vacuum(into)
    with pytest.raises(pagedb.CantOpenError):
        ds.vacuum(into)                                   # DEST exists
    other = pagedb.open(into)
    assert len(other) == 20 and other.stats()["bytes_dead"] == 0
    assert bytes(other[5]["image"]) == sample(5)["image"]
    other.close()
    v = ds.view(5, "image")
    with pytest.raises(pagedb.MisuseError, match="views"):
        ds.vacuum()                                       # in place, under a view of the map
    assert bytes(v) == sample(5)["image"]
    del v
    it = ds.iterate([1, 3])
    with pytest.raises(pagedb.MisuseError):
        ds.vacuum()                                       # an iterator's reader is open
    it.close()
    del it
    ds.vacuum()
    st = ds.stats()
    assert st["bytes_dead"] == 0 and st["samples"] == 20
    assert [bytes(ds[i]["image"]) == sample(i)["image"] for i in range(1, 40, 2)] == [True] * 20
    with pytest.raises(pagedb.NotFoundError):
        ds[0]
    ds.close()
    ro = pagedb.open(path)
    with pytest.raises(pagedb.ReadOnlyError):
        ro.vacuum()
    ro.close()


def test_attach(path, tmp_path):
    ds = make(path, 10)
    p2 = str(tmp_path / "b.pagedb")
    make(p2, 5).close()
    with pytest.raises(pagedb.ConstraintError) as e:
        ds.attach(p2)                                      # ids 0..4 collide
    assert e.value.code == pagedb.CONSTRAINT
    assert ds.attach(p2, "offset", 100) == 5
    assert bytes(ds[103]["image"]) == sample(3)["image"] and ds[103]["label"] == sample(3)["label"]
    assert ds.attach(p2, policy="after") == 5
    assert len(ds) == 20
    with pytest.raises(ValueError):
        ds.attach(p2, "sideways")
    with pytest.raises(pagedb.CantOpenError):
        ds.attach(str(tmp_path / "nosuch.pagedb"))
    p3 = str(tmp_path / "c.pagedb")
    c = pagedb.open(p3, "c")
    c.add_field("other", "int")
    c.close()
    with pytest.raises(pagedb.MismatchError):
        ds.attach(p3, "after")
    ds.close()
    assert len(pagedb.open(path)) == 20
    assert not os.path.exists(str(tmp_path / "nosuch.pagedb"))
