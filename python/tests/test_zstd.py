"""zstd codecs from Python (issue 28): codec="zstd", "zstd:19", "zstd:-5",
the dictionary codec "zstd-dict", recoding by vacuum(codecs=...), and bad
codec names."""
import pytest

import pagedb
from conftest import make, sample


@pytest.mark.parametrize("codec", ["zstd", "zstd:19", "zstd:-5", "zstd-dict", "zstd-dict:7"])
@pytest.mark.parametrize("read_mode", ["mmap", "copy"])
def test_round_trip(path, codec, read_mode):
    make(path, 30, codec).close()
    with pagedb.open(path, read_mode=read_mode, verify=True) as ds:
        f = ds.fields[0]
        assert f.codec == codec.split(":")[0]
        want_level = int(codec.split(":")[1]) if ":" in codec else 3
        assert f.level == want_level
        for i in range(30):
            assert ds.read(i, "image") == sample(i)["image"]
            assert ds[i]["caption"] == sample(i)["caption"]


def captions(n, start=0):
    return ["{\"id\": %d, \"caption\": \"a photo of %d cats on a %s\", \"w\": %d}"
            % (i, i % 7, ("mat", "sofa", "bed")[i % 3], i * 37 % 640) for i in range(start, start + n)]


def test_dictionary_learned_and_recoded(path, tmp_path):
    """A zstd-dict field learns from its first 2000 values (stored as
    given), compresses the rest; vacuum(codecs=...) trains one on all of
    them and compresses every one; zstd:19 drops the dictionaries."""
    ds = pagedb.open(path, "c")
    ds.add_field("meta", "text", "zstd-dict")
    text = captions(3000)
    with ds.writer() as w:
        for i, t in enumerate(text):
            w.append({"meta": t}, id=i)
    ds.commit()
    n_z = ds.sql('SELECT count("meta:z") FROM sample')[0][0]
    assert 900 <= n_z <= 1001
    dest = str(tmp_path / "recoded.pagedb")
    ds.vacuum(dest, codecs={"meta": "zstd-dict:5"})
    ds.close()
    with pagedb.open(dest) as d2:
        assert d2.fields[0].codec == "zstd-dict" and d2.fields[0].level == 5
        assert d2.sql('SELECT count(*) - count("meta:z") FROM sample')[0][0] == 0
        stored, raw = d2.sql('SELECT sum("meta:z"), sum(meta) FROM sample')[0]
        assert raw / stored > 1.8
        assert [d2[i]["meta"] for i in range(0, 3000, 97)] == text[::97]
        assert d2.check() == []
    with pagedb.open(dest, "w") as d3:
        d3.vacuum(codecs={"meta": "zstd:19"})
        assert (d3.fields[0].codec, d3.fields[0].level) == ("zstd", 19)
        assert [d3[i]["meta"] for i in range(0, 3000, 89)] == text[::89]


def test_bad_codecs(path):
    ds = pagedb.open(path, "c")
    for bad in ["zstd:23", "zstd:-200000", "zstd-dict:99", "zstdx", "zstd:", "zstd:x"]:
        with pytest.raises((ValueError, pagedb.Error)):
            ds.add_field("f", "bytes", bad)
    with pytest.raises((ValueError, pagedb.Error)):
        ds.add_field("i", "int", "zstd")
    ds.add_field("t", "text", "zstd")
    with pytest.raises(ValueError):
        ds.vacuum(str(path) + ".x", codecs={"t": "zstd:99"})
    with pytest.raises(TypeError):
        ds.vacuum(str(path) + ".y", codecs={"t": 3})
    ds.close()
