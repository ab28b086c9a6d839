import pytest

from treebo import Choice, Real, TreeSpace, Vertex
from treebo.loop import initial_design
from treebo.loop.design import default_initial_size
from treebo.test_functions import Jenatton, generalized_jenatton_space


def test_the_default_size_is_paths_plus_one_between_5_and_20():
    assert default_initial_size(Jenatton().space) == 5  # 4 paths
    assert default_initial_size(generalized_jenatton_space(4)) == 9  # 8 paths
    flags = TreeSpace(
        Vertex(
            choices=[
                Choice(f"f{i}", {"on": Vertex([Real(f"r{i}", 0, 1)]), "off": Vertex()})
                for i in range(8)
            ]
        )
    )
    assert default_initial_size(flags) == 20  # 256 paths


@pytest.mark.parametrize("seed", [0, 1])
def test_every_path_is_visited_and_seeds_differ(seed):
    space = generalized_jenatton_space(4)
    configs = initial_design(space, 9, seed)
    paths = {tuple(sorted(k for k in c if k.startswith("x"))) for c in configs}
    assert len(paths) == space.num_paths
    assert [space.validate(c) for c in configs] == configs
    assert configs != initial_design(space, 9, seed + 1)
    assert configs == initial_design(space, 9, seed)
