"""python -m nnwasm COMMAND ...   (commands: inspect, compile)"""
import sys

USAGE = ("usage: python -m nnwasm inspect MODEL [--input-shape NAME=D0,D1,...] [--json]\n"
         "       python -m nnwasm compile MODEL -o MODEL.nnwp [--input-shape NAME=D0,D1,...]")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "inspect":
        from .inspect_model import main as inspect_main
        return inspect_main(argv[1:])
    if argv[0] == "compile":
        from .plan_compile import main as compile_main
        return compile_main(argv[1:])
    print(f"nnwasm: unknown command '{argv[0]}'\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
