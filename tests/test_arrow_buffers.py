"""goldset.eval.columns.arrow_array and as_numpy: Arrow arrays built and read through their buffers.

Without pandas loaded they avoid pyarrow's conversions (which import pandas); they must give
exactly what pyarrow's own give. The buffer path only runs in a process without pandas, so
the values are converted in a fresh interpreter and compared here with pyarrow's. And
eval.arrow's stand-ins import pyarrow one thread at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import types

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from goldset.eval.columns import arrow_array, as_numpy

CONVERT = """
import json, sys
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from goldset.eval.columns import arrow_array, as_numpy

strings = arrow_array(["q1", "", "d\u00e9j\u00e0 vu", "\u00a0x"])
booleans = arrow_array(np.array([True, False, True, True, False, True, False, False, True]))
numbers = arrow_array(np.array([3, -1, 7], dtype=np.int64))
scores = arrow_array(np.array([0.5, -np.inf, 1e300]))
nulls = pc.index_in(strings, value_set=arrow_array(["d\u00e9j\u00e0 vu", "q1"]))
result = {
    "strings": [strings.type.equals(pa.large_string()), as_numpy(strings).tolist()],
    "booleans": as_numpy(booleans.slice(3)).tolist(),
    "numbers": as_numpy(numbers.slice(1)).tolist(),
    "scores": repr(as_numpy(scores).tolist()),
    "index_in": as_numpy(nulls, null=-1).tolist(),
    "empty": [as_numpy(arrow_array([])).tolist(), str(as_numpy(arrow_array([])).dtype)],
    "pandas": "pandas" in sys.modules,
}
print(json.dumps(result))
"""


def test_buffer_conversions_without_pandas_equal_pyarrows_own():
    done = subprocess.run(
        [sys.executable, "-c", CONVERT], capture_output=True, text=True, timeout=120, check=True
    )
    converted = json.loads(done.stdout)
    flags = [True, False, True, True, False, True, False, False, True]
    found = pc.index_in(
        pa.array(["q1", "", "déjà vu", "\u00a0x"]), value_set=pa.array(["déjà vu", "q1"])
    )
    assert converted == {
        "strings": [True, ["q1", "", "déjà vu", "\u00a0x"]],
        "booleans": pa.array(flags).slice(3).to_pylist(),
        "numbers": [-1, 7],
        "scores": repr([0.5, -np.inf, 1e300]),
        "index_in": [-1 if value is None else value for value in found.to_pylist()],
        "empty": [[], "object"],
        "pandas": False,
    }


def test_with_pandas_loaded_they_use_pyarrows_conversions_alike():
    ids = np.array(["b", "a", "b"], dtype=object)
    assert arrow_array(ids).equals(pa.array(ids, pa.large_string()))
    assert as_numpy(arrow_array(np.array([True, False]))).tolist() == [True, False]
    positions = pc.index_in(arrow_array(ids), value_set=arrow_array(["a"]))
    assert as_numpy(positions, null=-1).tolist() == [-1, 0, -1]


def test_the_first_imports_of_pyarrow_are_made_one_thread_at_a_time(monkeypatch):
    # Two threads importing pyarrow at once (a large run and its qrels are read on two) could
    # meet it half-initialised: 1 to 3 evals in 30 of a 200,000-line messy run failed so.
    import pyarrow.compute
    import pyarrow.csv  # noqa: F401 - the slow import below hands back the real modules

    from goldset.eval import arrow

    busy, most, count = 0, 0, threading.Lock()
    imported: list[str] = []

    def slow_import(name: str) -> types.ModuleType:
        nonlocal busy, most
        with count:
            busy += 1
            most = max(most, busy)
            imported.append(name)
        time.sleep(0.05)
        with count:
            busy -= 1
        return sys.modules[name]

    monkeypatch.setattr(arrow.importlib, "import_module", slow_import)
    modules = [arrow.LazyModule("pyarrow"), arrow.LazyModule("pyarrow.csv")]
    names: list[str] = []
    threads = [threading.Thread(target=lambda m=m: names.append(m.__name__)) for m in modules * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1
    assert sorted(names) == ["pyarrow", "pyarrow", "pyarrow.csv", "pyarrow.csv"]
    # A first touch imports all three: pyarrow's own functions import pyarrow.compute.
    assert set(imported) == {"pyarrow", "pyarrow.compute", "pyarrow.csv"}
