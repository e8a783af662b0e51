"""python -m pagedb ARGS: the pagedb shell (doc/shell.md), the same C shell
as the pagedb program, compiled into the module (python/shellentry.c).
The pip install's ``pagedb`` script runs ``main`` too."""
import sys


def main() -> int:
    """Run the shell with sys.argv[1:]; its exit status."""
    from . import _pagedb
    return _pagedb.shell_main(["pagedb"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
