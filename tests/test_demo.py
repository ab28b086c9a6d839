"""The README's demo prints a comparison table."""

from treebo.demo import main


def test_demo_prints_treebo_and_random_rows(capsys):
    main(["--budget", "6", "--seed", "1"])
    out = capsys.readouterr().out
    assert "treebo (add_tree)" in out and "random search" in out
    assert "log10 regret" in out
