"""``python -m treebo`` runs the demo."""

from treebo.demo import main

main()
