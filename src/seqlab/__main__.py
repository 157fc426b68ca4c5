from seqlab.cli.main import main

raise SystemExit(main())
