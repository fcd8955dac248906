"""`tunewatch remediate`: placeholder replaced below."""
def add_parser(subparsers, scan_args):
    pass
