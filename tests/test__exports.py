import sys
import types

import pytest

from treebo._exports import lazy_exports


def test_a_lazy_name_loads_its_module_on_first_use_and_stays():
    module = types.ModuleType("fake_facade")
    sys.modules["fake_facade"] = module
    try:
        module.__getattr__, module.__dir__ = lazy_exports(
            "fake_facade", {"sqrt": "math", "dumps": "json"}
        )
        assert module.sqrt(9.0) == 3.0
        assert "sqrt" in vars(module)  # cached: no second lookup
        assert {"sqrt", "dumps"} <= set(dir(module))
        with pytest.raises(AttributeError, match="has no attribute 'nope'"):
            module.nope  # noqa: B018
    finally:
        del sys.modules["fake_facade"]


def test_the_top_level_loads_its_names_on_first_use():
    import treebo
    import treebo.loop.run

    assert treebo.minimize is treebo.loop.run.minimize
