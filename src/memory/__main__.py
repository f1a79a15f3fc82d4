"""``python -m memory``: the same as the ``memory`` command."""

from memory.cli.main import main

if __name__ == "__main__":
    main()
