"""The `seqlab` command. Each subcommand lives in its own module here."""
