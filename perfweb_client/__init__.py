"""The perfweb upload client: standard library only, so it installs on a production host
or in a CI job without pulling anything else in."""
