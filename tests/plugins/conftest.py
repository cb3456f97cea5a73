"""The plug-in distributions here are put on ``sys.path`` by the tests that use them; pytest
must not import their modules itself (that would register the types before the test does)."""

collect_ignore_glob = ["polygons/*"]
